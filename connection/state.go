package connection

import "fmt"

// State is the connection state, as Curator names them.
type State int

const (
	// Connected: the first session is established.
	Connected State = iota + 1
	// Suspended: the connection was lost; the session may still be alive
	// on the server. Under the standard error policy a lock holder must
	// already treat its lock as lost: the hold ends, with ErrSuspended.
	Suspended
	// Reconnected: the client is connected again, with the same session
	// after Suspended, or with a new one after Lost. With the same session
	// it is reported once the shared watches set before are registered
	// again, so a change made while the client was cut off has fired its
	// watch by then.
	Reconnected
	// Lost: the session is gone. The server expired it, or the client was
	// suspended for longer than the session timeout, so the server may have
	// expired it. Every ephemeral node and watch of that session is gone or
	// about to be. The client goes on to open a new session.
	Lost
	// ReadOnly: connected to a server that serves reads only. go-zookeeper
	// v1.0.4 never asks for read-only sessions, so this state is defined for
	// completeness and not reached today.
	ReadOnly
)

// String returns CONNECTED, SUSPENDED, RECONNECTED, LOST or READ_ONLY.
func (s State) String() string {
	switch s {
	case Connected:
		return "CONNECTED"
	case Suspended:
		return "SUSPENDED"
	case Reconnected:
		return "RECONNECTED"
	case Lost:
		return "LOST"
	case ReadOnly:
		return "READ_ONLY"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// IsConnected reports whether the state has a live connection.
func (s State) IsConnected() bool { return s == Connected || s == Reconnected || s == ReadOnly }

// ErrorPolicy decides which states end the trust in a hold.
type ErrorPolicy int

const (
	// StandardPolicy (the default, as in Curator): Suspended already counts
	// as losing a lock, since the session may expire at any moment and the
	// client cannot know.
	StandardPolicy ErrorPolicy = iota
	// SessionPolicy: only Lost counts. A holder keeps its lock through a
	// short disconnection, at the risk that the server has already expired
	// the session when the client finds out (never later than the session
	// timeout after the server last heard from it).
	SessionPolicy
)

func (p ErrorPolicy) String() string {
	switch p {
	case StandardPolicy:
		return "standard"
	case SessionPolicy:
		return "session"
	}
	return fmt.Sprintf("ErrorPolicy(%d)", int(p))
}
