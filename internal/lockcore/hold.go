package lockcore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// RevokeMessage is the data Curator's Revoker writes to a holder's node to
// ask it to let go.
var RevokeMessage = []byte("__REVOKE__")

// ErrReleased is the cause of a hold's context after the hold was
// released.
var ErrReleased = errors.New("lockcore: lock released")

// Hold is one held lock: the node, the lost-lock signal and the context of
// the work done under it. It costs no goroutine while it lasts: the end of
// its trusted period cancels its context through context.AfterFunc.
type Hold struct {
	Acquired
	client *connection.Client

	ctx      context.Context // cancelled when the hold is untrusted or released
	cancel   context.CancelCauseFunc
	stopLost func() bool   // unregisters the period's AfterFunc
	revoking chan struct{} // closed when the revocation watcher has ended
}

// NewHold starts watching a hold of a, confirmed (Confirm): it is lost
// when its period, a.Trusted, ends — when its session can no longer be
// trusted under the client's error policy. If onRevoke is not nil, the
// holder's node data is watched too, and onRevoke is called, in a
// goroutine of its own, the first time another process writes
// RevokeMessage to it (the goroutine ends when onRevoke returns).
func NewHold(c *connection.Client, a Acquired, lostErr error, onRevoke func()) *Hold {
	ctx, cancel := context.WithCancelCause(context.Background())
	h := &Hold{Acquired: a, client: c, ctx: ctx, cancel: cancel, revoking: closedChan}
	h.stopLost = context.AfterFunc(a.Trusted, func() {
		cancel(lostErr)
		if context.Cause(ctx) == lostErr { // not released first
			c.Logger().Warn("zkrecipes hold lost", "node", a.Path, "session", fmt.Sprintf("%#x", a.Session.ID()),
				"token", a.Token, "cause", lostErr, "session_error", a.Session.Err())
		}
	})
	if onRevoke != nil {
		h.revoking = make(chan struct{})
		go func() {
			defer close(h.revoking)
			h.watchRevocation(c, onRevoke)
		}()
	}
	return h
}

// Done is closed when the hold can no longer be trusted, or was released.
func (h *Hold) Done() <-chan struct{} { return h.ctx.Done() }

// Lost reports whether the hold can no longer be trusted or was released.
// Unlike a look at Done, it also sees the end of the trusted period at
// once, before context.AfterFunc has passed it on to Done.
func (h *Hold) Lost() bool {
	select {
	case <-h.ctx.Done():
		return true
	case <-h.Trusted.Done():
		return true
	default:
		return false
	}
}

// Context is cancelled when Done closes; its cause says why.
func (h *Hold) Context() context.Context { return h.ctx }

// ContextAs returns a context that is cancelled right after the hold's
// (in a goroutine of the context package's), with the same cause except
// that a release is reported as released: a recipe's own word for it
// ("resigned", "done").
func (h *Hold) ContextAs(released error) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	context.AfterFunc(h.ctx, func() {
		cause := context.Cause(h.ctx)
		if errors.Is(cause, ErrReleased) {
			cause = released
		}
		cancel(cause)
	})
	return ctx
}

// End releases the hold's node with release and ends the hold, by the
// rules every recipe shares:
//   - a lost hold ends at once, without a request: its node goes with its
//     session, or abandon gets rid of it while the session lives;
//   - released, or found gone with its session: the hold ends;
//   - the release failed and the hold is lost by now (a cut, say): it ends
//     all the same, and abandon gets rid of the node;
//   - the release failed while the hold is trusted: it is still held
//     (ended is false) and the caller may try again.
//
// When the hold was lost the error wraps lostErr. A nil abandon deletes
// the node in the background while its session lives.
func (h *Hold) End(ctx context.Context, release func(context.Context, Acquired) error, abandon func(Acquired), lostErr error) (ended bool, err error) {
	if h.Lost() {
		h.drop(abandon)
		return true, lostErr
	}
	err = release(ctx, h.Acquired)
	switch {
	case err == nil:
		h.Stop()
		return true, nil
	case errors.Is(err, connection.ErrSessionLost):
		h.Stop() // the node went with its session
		return true, lostErr
	case h.Lost():
		h.drop(abandon)
		return true, errors.Join(lostErr, err)
	}
	return false, err // still held
}

// drop ends a lost hold: it stops, and abandon (nil: a
// background delete while the session lives) gets rid of its node.
func (h *Hold) drop(abandon func(Acquired)) {
	h.Stop()
	if abandon != nil {
		abandon(h.Acquired)
		return
	}
	h.client.GuaranteedDelete(h.Session, h.Path, 0)
}

// Stop ends the hold: its context is cancelled (a release, unless it was
// lost first), and its revocation watcher, if any, has ended.
func (h *Hold) Stop() {
	h.stopLost()
	h.cancel(ErrReleased)
	<-h.revoking
}

// watchRevocation watches the holder's node data until the hold ends. It
// ends with the hold's context (GetW and WaitEvent honour it).
func (h *Hold) watchRevocation(c *connection.Client, onRevoke func()) {
	for {
		data, _, w, err := c.GetWatch(h.ctx, h.Path)
		if err != nil {
			return // node gone, session lost, or hold over
		}
		if bytes.Equal(data, RevokeMessage) {
			if h.ctx.Err() == nil {
				// Its own goroutine: the listener may well call Unlock,
				// which waits for this watcher to end.
				go onRevoke()
			}
			return
		}
		select {
		case <-w.Done():
		case <-h.ctx.Done():
			return
		}
		if w.Err() != nil || w.Event().Type == zk.EventNodeDeleted {
			return
		}
	}
}

// Revoke asks the holder of node path to let go, as Curator's Revoker
// does: it writes RevokeMessage to the node. Whether the holder releases is
// up to it.
func Revoke(ctx context.Context, c *connection.Client, path string) error {
	_, err := c.Set(ctx, path, RevokeMessage, -1)
	return err
}
