package lockcore

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Acquired is a node that holds the lock.
type Acquired struct {
	Path    string              // the node
	Session *connection.Session // the session that owns it
	Token   int64               // its czxid: the fencing token
	// Unique says that nobody makes the node again at its path: its name
	// is sequential or carries a protected create's GUID. Its release is
	// then a plain delete, a round trip less (connx DeleteUnique); a node
	// at a path others create too (naive's, a taken item's) is read first.
	Unique bool
	// Trusted is the connected period in which the hold was confirmed
	// (Session.Trusted): it was live then, and is cancelled when holds
	// taken in it can no longer be trusted. Set by Confirm.
	Trusted context.Context
	// Own is a watch on the node, set while it was known to exist, that a
	// hold ends with when the node is deleted (NewHold).
	Own *connection.Watch
	// OwnSoon, when Own is nil, is the watch on the node on its way: a
	// listing that names the node said it holds, and its watch, sent
	// right behind that listing, has not been answered yet. The hold takes it when it
	// comes (NewHold); a node found gone then ends the hold.
	OwnSoon *OwnWatch
}

// OwnWatch is a watch on our own node, sent and not yet answered.
type OwnWatch struct {
	done   chan struct{} // closed once answered
	watch  *connection.Watch
	err    error              // WatchOwn's
	cancel context.CancelFunc // gives up on the answer
}

// watchOwnSoon sends the watch on our own node. Its context is not ctx: a
// hold handed out before the answer must still get it after the caller's
// context ends (cancel gives up).
func (l *Lock) watchOwnSoon(ctx context.Context, a Acquired) *OwnWatch {
	octx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o := &OwnWatch{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(o.done)
		o.watch, o.err = WatchOwn(octx, l.Client, a.Path, a.Token)
	}()
	return o
}

// WatchOwn sets a data watch on a participant's own node by path, with a
// read, and returns it if the node there is still the one created at czxid
// (the participant's token). A node gone, or made again at the path by
// another session after someone deleted ours, fails with an error wrapping
// ErrNodeGone that says which; any other error is the read's. A watch
// fired for a change of data is set again through it: the server reports
// a node deleted and made again since the watch was set as a change of
// data, and a read by path alone would take the new node for ours.
func WatchOwn(ctx context.Context, c *connection.Client, path string, czxid int64) (*connection.Watch, error) {
	_, stat, w, err := c.GetWatch(ctx, path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, errtext.Errorf("%w: %s (not found)", ErrNodeGone, path)
	case err != nil:
		return nil, err
	case stat.Czxid != czxid:
		return nil, errtext.Errorf("%w: %s (made again: czxid %#x, owner %#x)", ErrNodeGone, path, stat.Czxid, stat.EphemeralOwner)
	}
	return w, nil
}

// confirm is the last step before a hold is reported: the session that
// owns the node must still be trusted. While it is suspended (standard
// policy) the node, if the session lives, is still ours and still first —
// nodes ahead of it can only leave — so confirm waits for the session to
// be trusted again; if the session ends, the attempt restarts. Without it
// Lock could return a hold whose Done is already closed.
func (l *Lock) confirm(ctx context.Context, a Acquired) (Acquired, error) {
	a, err := Confirm(ctx, l.Client, a)
	if errors.Is(err, ErrNodeGone) {
		return Acquired{}, ErrRestart
	}
	return a, RestartOn(err)
}

// Confirm waits until a's session is trusted and records that period in
// a.Trusted (see Lock.await). It fails with an error wrapping
// connection.ErrSessionLost when the session ends first, or ctx's error.
//
// It also makes sure a hold never starts on a spent watch of its node
// (a.Own): a watch that fired for a change of the node's data (a
// revocation, an operator's write) says nothing of a deletion after it, so
// the node is read again with a new watch — and must still be the node
// a.Token names (its czxid), not one made again at the path by another
// session. A node gone fails with ErrNodeGone, unless its session ended:
// then the node went with it (Close ends the session before the server
// deletes it), and the error wraps connection.ErrSessionLost.
func Confirm(ctx context.Context, c *connection.Client, a Acquired) (Acquired, error) {
	if a.Own != nil {
		select {
		case <-a.Own.Done():
			if ev := a.Own.Event(); ev.Type != zk.EventNodeDataChanged {
				return Acquired{}, nodeGone(a, a.Own.Err(), errtext.Errorf("%w: %s (%s)", ErrNodeGone, a.Path, ev.Type))
			}
			// The read follows the client into its next session, if the
			// node's has ended: a node found there is checked by czxid.
			own, err := WatchOwn(ctx, c, a.Path, a.Token)
			if errors.Is(err, ErrNodeGone) {
				return Acquired{}, nodeGone(a, nil, err)
			}
			if err != nil {
				return Acquired{}, err
			}
			a.Own = own
		default:
		}
	}
	period, err := a.Session.Trusted(ctx)
	if err != nil {
		return Acquired{}, err
	}
	a.Trusted = period
	return a, nil
}

// nodeGone is Confirm's error for a's node found gone (gone, wrapping
// ErrNodeGone, says how): the end of its session when that has ended (or
// ended is not nil: the node's watch ended with its session) — the node
// went with it, nobody deleted it — else gone.
func nodeGone(a Acquired, ended, gone error) error {
	if err := a.Session.Err(); err != nil {
		return errtext.Errorf("%s: %w", a.Path, err)
	}
	if ended != nil {
		return errtext.Errorf("%s: %w", a.Path, ended)
	}
	return gone
}

// ErrNodeGone means the node of a hold was deleted by someone else (or,
// heard as a deletion, with its session): a hold about to begin has
// nothing to hold, and a hold's context has it in its cause when it ended
// so. It is connection.ErrNodeDeleted, the sentinel a recipe's caller
// matches: lockcore is not a package the caller knows.
var ErrNodeGone = connection.ErrNodeDeleted
