package lockcore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// ErrReleased is the cause of a hold's context after the hold was
// released, unless the recipe names its own (HoldConfig.Released), as
// every recipe does. It names no package: lockcore is not a package the
// caller knows.
var ErrReleased = errors.New("lock released")

// Hold is one held lock: the node, the lost-lock signal and the context of
// the work done under it. It costs no goroutine while it lasts: the end of
// its trusted period cancels its context through context.AfterFunc, and
// the deletion of its node through a hook on the node's watch.
//
// The rules a Hold keeps, which every recipe relies on (docs/locks.md,
// "Ownership and release"):
//
//  1. A hold ends before its release is sent. End closes Done (and runs the
//     hooks of Context's AfterFunc) first, synchronously, and only then sends
//     the delete: the server wakes the next contender as soon as the delete
//     applies, and with the 0-RTT handoff that contender holds at once.
//  2. A release that was sent and not answered may have applied. The hold
//     is over whatever the answer; a node that may be left is deleted in
//     the background while its session lives, proven first to be the node
//     the hold made (by czxid), never blind.
//  3. A hold whose node is gone has ended: the node's watch, set before the
//     hold began, ends it the moment the deletion is heard.
//  4. A lost hold's node is deleted in the background while its session
//     lives: under the standard policy a suspended session may come back,
//     and with it a node that would otherwise block everyone behind it.
type Hold struct {
	Acquired
	client *connection.Client
	cfg    holdConfig

	ctx    context.Context // a holdContext: cancelled when the hold ends
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	over     bool      // the hold has ended; ctx is cancelled
	consumed bool      // ended by EndConsumed: the observer is told so
	ending   error     // the cause it ends with, set before the hooks run
	hooks    []*func() // AfterFunc's, run when it ends
	stopLost func() bool
	wg       sync.WaitGroup // the node watcher's and the revocation watcher's goroutines

	// unsure is set when the node's watch reports a change of its data,
	// until a read shows the node is still the hold's (rewatch): the
	// server reports a node deleted and made again at the path, while the
	// client was cut off, as a change of the data. A guard refuses
	// meanwhile.
	unsure atomic.Bool
}

// HoldConfig is what a recipe tells a hold.
type HoldConfig struct {
	// Lost is the recipe's sentinel for a hold that can no longer be
	// trusted ("mutex: lock lost"). It wraps nothing: the cause of a lost
	// hold wraps it and what happened, once (see Hold.Cause).
	Lost error
	// Released is the cause after a release; ErrReleased if nil.
	Released error
	// OnRevoke, if not nil, is called in a goroutine of its own the first
	// time another process writes RevokeMessage to the node.
	OnRevoke func()
	// Recipe and Path name the hold to the client's observer
	// (connection.Observer's Hold), told with Ctx, the context the hold
	// was taken with (nil: none), and in its log lines ("mutex: hold
	// lost"). A hold without Recipe, or Unobserved (a recipe's inner
	// lock whose hold is not the recipe's: a lease's taker decides under
	// one), tells the observer nothing.
	Recipe, Path string
	Ctx          context.Context
	Unobserved   bool
}

// holdConfig is what a hold keeps of its HoldConfig.
type holdConfig struct {
	Lost, Released error
	OnRevoke       func()
	recipe, path   string // for its log lines
}

// NewHold starts a hold of a, confirmed (Confirm): it is lost when its
// period, a.Trusted, ends — when its session can no longer be trusted
// under the client's error policy — or when a.Own, the watch on its node,
// says the node was deleted (or a.OwnSoon, that watch on its way: taken
// when answered, a node found gone ending the hold). A hold without either
// is not told of its node's deletion.
func NewHold(c *connection.Client, a Acquired, cfg HoldConfig) *Hold {
	if cfg.Released == nil {
		cfg.Released = ErrReleased
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	h := &Hold{Acquired: a, client: c, cfg: holdConfig{cfg.Lost, cfg.Released, cfg.OnRevoke, cfg.Recipe, cfg.Path}, cancel: cancel}
	h.ctx = holdContext{ctx, h}
	h.observe(cfg) // before anything can end the hold
	h.mu.Lock()    // the period may be over already: its function waits for stopLost
	h.stopLost = context.AfterFunc(a.Trusted, func() {
		cause := h.periodLost()
		if h.finish(cause) {
			h.logLost(cause)
			h.deleteLater()
		}
	})
	h.mu.Unlock()
	if a.Own == nil && a.OwnSoon != nil {
		// The node's watch is on its way (the lock was held at its first
		// listing): the hold takes it when it is answered, unless the
		// hold has ended by then. The node was there at that listing,
		// and the watch was sent right behind it: a node found gone now
		// was deleted since, and the hold is lost as if the watch had
		// fired.
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.takeOwnSoon(a.OwnSoon)
		}()
	}
	if a.Own != nil {
		// Confirm gave a watch that had not fired. One that has fired
		// since says nothing of a deletion after it, and a hold must not
		// begin unsure of its node: it is lost at once, and the caller
		// acquires again. (A watch that fires later, for a change of the
		// data, is set again by rewatch.)
		select {
		case <-a.Own.Done():
			if h.finish(h.lostWith(errtext.Errorf("the watch of its node %s fired as it began", a.Path))) {
				h.deleteLater()
			}
		default:
			connx.AfterFire(a.Own, h.nodeEvent)
		}
	}
	if cfg.OnRevoke != nil {
		h.mu.Lock()
		if !h.over {
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				h.watchRevocation(cfg.OnRevoke)
			}()
		}
		h.mu.Unlock()
	}
	return h
}

// takeOwnSoon waits for the watch on the hold's node sent with its first
// listing, and ends the hold if the node is gone; it gives up when the
// hold ends first.
func (h *Hold) takeOwnSoon(o *OwnWatch) {
	select {
	case <-o.done:
	case <-h.ctx.Done():
		o.cancel()
		return
	}
	o.cancel()
	switch {
	case errors.Is(o.err, ErrNodeGone):
		h.gone(o.err)
	case o.err != nil:
		h.unwatched(o.err)
	default:
		h.mu.Lock()
		over := h.over
		h.mu.Unlock()
		if !over {
			connx.AfterFire(o.watch, h.nodeEvent)
		}
	}
}

// gone ends the hold: its node is gone, or the node at its path is not
// the one it made — its own was deleted, and another made at the same
// path (why wraps ErrNodeGone and says which).
func (h *Hold) gone(why error) {
	if cause := h.lostWith(why); h.finish(cause) {
		h.logLost(cause)
	}
}

// finish ends the hold with cause, once: the hooks run, then Done closes,
// before it returns — so that whoever sees Done closed sees the hooks'
// work done (a multi-lock's Done closed). It reports whether this call
// ended it.
func (h *Hold) finish(cause error) bool {
	h.mu.Lock()
	if h.over {
		h.mu.Unlock()
		return false
	}
	h.over, h.ending = true, cause
	hooks, stopLost := h.hooks, h.stopLost
	h.hooks = nil
	h.mu.Unlock()
	for _, f := range hooks {
		(*f)()
	}
	h.cancel(cause)
	stopLost()
	return true
}

// nodeEvent is the hook on the node's watch: it runs on the client's
// receive loop and must not call the client. A deletion ends the hold; a
// change of the data (a revocation) needs the watch set again.
func (h *Hold) nodeEvent(ev zk.Event) {
	h.mu.Lock()
	over := h.over
	h.mu.Unlock()
	if over {
		return // released: this is its own delete
	}
	switch ev.Type {
	case zk.EventNodeDeleted:
		h.gone(errtext.Errorf("%w: %s", ErrNodeGone, h.Path))
	case zk.EventNotWatching:
		// The session ended; the node went with it.
		why := h.Session.Err()
		if why == nil {
			why = errtext.Errorf("%w: the watch of its node ended: %w", connection.ErrSessionLost, ev.Err)
		}
		h.finish(h.lostWith(why))
	default:
		h.unsure.Store(true)
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.over {
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				h.rewatch()
			}()
		}
	}
}

// rewatch sets the node's watch again after a change of its data, once a
// read shows the node at the path is still the hold's: the same czxid.
// Another one means the hold's node was deleted and the path made again —
// the server reports that as a change of the data to a watch set again
// after a reconnect — and the hold is over.
func (h *Hold) rewatch() {
	w, err := WatchOwn(h.ctx, h.client, h.Path, h.Token)
	switch {
	case errors.Is(err, ErrNodeGone):
		h.gone(err)
	case err != nil:
		h.unwatched(err)
	default:
		h.unsure.Store(false)
		connx.AfterFire(w, h.nodeEvent)
	}
}

// unwatched ends a hold whose node's watch could not be set (err, not a
// NoNode): its Done could no longer close when the node is deleted. Under
// the session policy a cut does not end the hold's period, so the
// connection's failure of that one read is not the end of the hold on its
// own — without this a hold watched nothing and held on after its node
// was gone. The node, if it is still there, goes in the background while
// the session lives. A hold that ended already (its read failed because it
// did) is left as it is.
func (h *Hold) unwatched(err error) {
	if cause := h.lostWith(errtext.Errorf("the watch of its node %s could not be set: %w", h.Path, err)); h.finish(cause) {
		h.logLost(cause)
		h.deleteLater()
	}
}

// logLost logs the loss of the hold, ended with cause, as a warning named
// for its recipe (docs/observability.md, "Logging").
func (h *Hold) logLost(cause error) {
	recipe := h.cfg.recipe
	if recipe == "" {
		recipe = "lock"
	}
	connx.Of(h.client).Logger().Warn(recipe+": hold lost", "path", h.cfg.path, "participant", h.Path,
		"session", fmt.Sprintf("%#x", h.Session.ID()), "token", h.Token, "cause", cause)
}

// periodLost is the cause of a hold lost with its trusted period: the
// recipe's lost sentinel wrapping the period's cause — a suspension
// (connection.ErrSuspended) or the session's end (its error, wrapping
// connection.ErrSessionLost).
func (h *Hold) periodLost() error {
	why := context.Cause(h.Trusted)
	if why == nil {
		return h.cfg.Lost // the period lasts: End of a hold over already asks
	}
	return errtext.Errorf("%w: %w", h.cfg.Lost, why)
}

// lostWith is the cause of a hold lost for why — its node deleted, its
// watch ended — unless its trusted period had already ended: a hold has
// one cause, the first, and a period that ended before why was heard
// ended the hold first (its AfterFunc may not have run yet).
func (h *Hold) lostWith(why error) error {
	if h.Trusted.Err() != nil {
		return h.periodLost()
	}
	return errtext.Errorf("%w: %w", h.cfg.Lost, why)
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

// Guard returns a guard of this hold for connection.Client.Multi: the
// transaction commits only while the hold lasts (connection.Guard). It
// checks the hold's node, whose path is its own: a sequential name made
// once, or a Claim that no other participant can make while the node is
// there. Its version is not compared: a revocation writes to the node
// while it is held. The hold is over for the guard when it is for Lost:
// Done closed, or the trusted period it was confirmed in ended.
func (h *Hold) Guard() *connection.Guard {
	return connx.NewGuard(h.Path, h.Session, h.guardErr)
}

// guardErr is nil while the hold lasts, then why it ended. It is called
// by the connection's writer: it takes no lock a caller of the client
// holds.
func (h *Hold) guardErr() error {
	if !h.Lost() {
		if h.unsure.Load() {
			return errtext.Errorf("%w: %s", connection.ErrHoldUnsettled, h.Path)
		}
		return nil
	}
	if cause := h.Cause(); cause != nil {
		return cause
	}
	return h.periodLost() // the period ended; Done follows
}

// Context is cancelled when Done closes; its cause says why. It has an
// AfterFunc method that runs its function synchronously (see holdContext).
func (h *Hold) Context() context.Context { return h.ctx }

// Cause is why the hold ended, nil while it lasts; it is Context's cause,
// set once, when the hold ends. It wraps the recipe's released sentinel
// (HoldConfig.Released) after a release, and otherwise its lost one
// (HoldConfig.Lost) and what happened first:
//   - connection.ErrSuspended: the connection was suspended under the
//     standard policy; the session may live on;
//   - the session's error, wrapping connection.ErrSessionLost (and
//     connection.ErrClosed after the client's Close): the session ended;
//   - connection.ErrNodeDeleted: its node was deleted while the session
//     lived;
//   - the error of a watch of its node that could not be set.
func (h *Hold) Cause() error { return context.Cause(h.ctx) }

// End ends the hold, then releases its node with release (nil: ends it
// without a request, as Stop does):
//   - a hold lost before sends nothing: its node goes with its session, or
//     is being deleted in the background; the error is why it was lost;
//   - otherwise the hold ends first (Done closes, with the released
//     cause), and then release is sent. Whatever its answer the hold is
//     over. If the release failed while the session lives — no answer
//     (the error wraps connection.ErrOutcomeUnknown), a cancelled context,
//     a refusal — the node is deleted in the background while its session
//     lives, if it is still the node the hold made.
//
// The error is nil when the node was released, wraps the lost cause when
// the session was lost before the answer, and otherwise says why the
// release failed.
func (h *Hold) End(ctx context.Context, release func(context.Context, Acquired) error) error {
	return h.EndWith(ctx, h.cfg.Released, release)
}

// EndWith is End with cause as the ended hold's cause instead of the
// configured released one: for a recipe that ends a hold for a reason of
// its own (an election's leader giving way).
func (h *Hold) EndWith(ctx context.Context, cause error, release func(context.Context, Acquired) error) error {
	if h.Lost() {
		if h.finish(h.periodLost()) {
			h.deleteLater() // the period ended, and its function came second
		}
		h.wg.Wait()
		return h.Cause()
	}
	if !h.finish(cause) {
		h.wg.Wait()
		return h.Cause()
	}
	h.wg.Wait() // the watchers end with the hold's context
	if release == nil {
		// Ended without a request: the node is the caller's to delete.
		return nil
	}
	err := release(ctx, h.Acquired)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, connection.ErrSessionLost):
		return errtext.Errorf("%w (%w)", h.cfg.Lost, err)
	}
	h.deleteLater()
	return err
}

// EndConsumed is End for a hold whose release consumes what it held (a
// queue item's): the client's observer is told so, unless the hold was
// lost first.
func (h *Hold) EndConsumed(ctx context.Context, release func(context.Context, Acquired) error) error {
	h.mu.Lock()
	h.consumed = !h.over
	h.mu.Unlock()
	return h.End(ctx, release)
}

// Stop ends the hold without a request (a release, unless it ended
// before): for a hold that is never handed out. Its node is the caller's.
func (h *Hold) Stop() {
	h.finish(h.cfg.Released)
	h.wg.Wait()
}

// deleteLater deletes the hold's node in the background while its session
// lives, if it is still the node the hold made (GuaranteedDelete by
// czxid).
func (h *Hold) deleteLater() {
	connx.Of(h.client).GuaranteedDelete(h.Session, h.Path, h.Token)
}
