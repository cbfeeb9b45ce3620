package lockcore

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Abandon deletes the node of a that its owner gives up on — a failed
// attempt, a lease or a take never handed out — with a fresh, bounded
// context, in a's session only, and only if it is still the node created
// at a.Token; if that fails while the session lives, the client keeps
// trying in the background (GuaranteedDelete). A node of a session that
// has ended went with it.
//
// The node is read before it is deleted (connection.DeleteCreated) even
// when a.Unique: an attempt is often given up because its node was found
// gone or made again at its path, and a plain delete would take the node
// made again.
func Abandon(c *connection.Client, a Acquired) {
	select {
	case <-a.Session.Done():
		return // the node went with its session
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), CleanupTimeout(a.Session))
	defer cancel()
	err := c.DeleteCreated(connx.Pin(ctx, a.Session), a.Path, a.Token)
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, connection.ErrSessionLost) {
		connx.Of(c).GuaranteedDelete(a.Session, a.Path, a.Token)
	}
}

// CleanupTimeout bounds a cleanup request of session s: its timeout, at
// least a second.
func CleanupTimeout(s *connection.Session) time.Duration {
	return max(s.Timeout(), time.Second)
}

// Release deletes the node of a hold, in its session, only if it is
// still the node the hold made: connection.DeleteCreated, or for a Unique
// name a plain delete first (connx DeleteUnique) — the hold is live, so
// its node's watch has not seen it deleted, and nobody else makes a node
// at that name. If the session that owned it is gone, the
// node went with it, and the error wraps ErrSessionLost. Any other error
// leaves the node's fate to the caller (Hold.End deletes it in the
// background).
func Release(ctx context.Context, c *connection.Client, a Acquired) error {
	lost := func() error { return errtext.Errorf("release %s: %w", a.Path, connection.ErrSessionLost) }
	if !connx.Of(c).Live(a.Session) {
		return lost()
	}
	ctx = connx.Pin(ctx, a.Session)
	var err error
	if a.Unique {
		err = connx.Of(c).DeleteUnique(ctx, a.Path, a.Token)
	} else {
		err = c.DeleteCreated(ctx, a.Path, a.Token)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		// Gone already: our own earlier attempt whose answer was lost
		// (a clean release), or the end of the session — possibly one
		// go-zookeeper replaced before the client noticed, in which case
		// the delete ran in the new session. Only the first is a release.
		if !connx.Of(c).Live(a.Session) {
			return lost()
		}
		return nil
	case errors.Is(err, connection.ErrSessionLost):
		return lost()
	}
	return err
}

// Release deletes the node of a hold of l (see the function Release).
func (l *Lock) Release(ctx context.Context, a Acquired) error { return Release(ctx, l.Client, a) }
