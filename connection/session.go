package connection

import (
	"sync"
	"time"
)

// Session is one ZooKeeper session of a Client: an epoch. Every ephemeral
// node lives exactly as long as the session that created it, so a lock
// holds exactly as long as its session. When the session is lost the
// Client opens a new one, a new Session value; the old one stays ended.
type Session struct {
	id      int64
	timeout time.Duration

	untrusted chan struct{} // closed at the first Suspended (standard policy) or the end
	done      chan struct{} // closed when the session is lost

	mu  sync.Mutex
	err error // why it ended
}

func newSession(id int64, timeout time.Duration) *Session {
	return &Session{id: id, timeout: timeout, untrusted: make(chan struct{}), done: make(chan struct{})}
}

// ID returns the session ID the server assigned; it is the
// ephemeralOwner of every ephemeral node the session creates.
func (s *Session) ID() int64 { return s.id }

// Timeout returns the session timeout the server granted.
func (s *Session) Timeout() time.Duration { return s.timeout }

// Done is closed when the session is lost: the server expired it, the
// client was cut off for longer than the timeout (so the server may have
// expired it), or the client was closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Untrusted is closed when a hold made in this session can no longer be
// trusted under the client's error policy: at the first Suspended under
// StandardPolicy, or when the session is lost under SessionPolicy. It is
// closed no later than Done.
func (s *Session) Untrusted() <-chan struct{} { return s.untrusted }

// Err returns nil while the session lives, then why it ended; the error
// wraps ErrSessionLost (and ErrClosed after Close).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// distrust closes Untrusted once.
func (s *Session) distrust() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.untrusted:
	default:
		close(s.untrusted)
	}
}

// end records why the session ended and closes Untrusted and Done once.
// It reports whether this call ended it.
func (s *Session) end(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	s.err = err
	select {
	case <-s.untrusted:
	default:
		close(s.untrusted)
	}
	close(s.done)
	return true
}
