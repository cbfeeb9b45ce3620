package lockcore

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Holder is one participant's local side of a lock: the hold it has, how
// many times it was taken (when reentrant), and the serialisation of Lock
// and Unlock. Every lock recipe is a Holder with its own Acquire and
// Release; the rules below are written once, here.
//
// Safety of the local side:
//   - Lock, reentry included, and Unlock take the gate, so a reentry never
//     succeeds while the last Unlock is deleting the node, and a Lock never
//     starts acquiring while an Unlock is still releasing.
//   - The last Unlock drops the hold before anything is sent, and the hold
//     ends (Done closes) before its delete leaves the client (Hold.End):
//     whatever the delete's answer, Unlock returns with nothing held, and
//     the next Lock makes a new node. A release whose answer never came is
//     finished in the background, on the node the hold made only.
//   - A hold whose Done is closed is lost. Lock and Unlock both notice it
//     under the gate, drop it, and return the recipe's lost error; the next
//     Lock acquires a new hold. A lost hold is never re-entered.
//   - Acquire confirms that the session is trusted before it reports a
//     hold; should the connected period end between that and the start of
//     the hold, or the node be deleted, the hold is ended and the
//     acquisition starts over, so Lock never returns nil with Done already
//     closed.
type Holder struct {
	client *connection.Client
	cfg    HolderConfig

	gate chan struct{} // one Lock or Unlock changes the hold at a time

	mu    sync.Mutex
	hold  *Hold
	count int
	last  *Hold // the hold that ended last, while none is held: Err and Context say why it ended
}

// HolderConfig is what a recipe tells its Holder.
type HolderConfig struct {
	Name string // the recipe, for errors: "mutex"
	Path string // the lock, for errors

	// Acquire takes the lock: it returns a confirmed hold, ErrWouldWait
	// (when wait is false and another contender holds it), or an error
	// after deleting whatever it created.
	Acquire func(ctx context.Context, wait bool) (Acquired, error)
	// Core, if set, takes the lock in place of Acquire (Core.Acquire),
	// called directly: an idle waiter parks under one frame less (see
	// Lock.Acquire).
	Core *Lock
	// Release deletes the hold's node in its session (see Hold.End). An
	// error wrapping connection.ErrSessionLost means the node went with
	// its session.
	Release func(ctx context.Context, a Acquired) error

	// The recipe's sentinels.
	ErrLocked    error // TryLock would wait
	ErrNotLocked error // Unlock without a hold
	ErrLockLost  error // the hold was lost before Unlock or reentry; wraps nothing (HoldConfig.Lost)
	ErrUnlocked  error // the cause of a hold ended by Unlock (HoldConfig.Released)
	// ErrHeld, if set, makes the lock non-reentrant: Lock on a held lock
	// returns it.
	ErrHeld error

	OnRevoke func() // see HoldConfig
}

// NewHolder returns a Holder that holds nothing.
func NewHolder(c *connection.Client, cfg HolderConfig) *Holder {
	return &Holder{client: c, cfg: cfg, gate: make(chan struct{}, 1)}
}

func (h *Holder) enter(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return h.errorf(op, err) // a free gate must not win over a done context
	}
	select {
	case h.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return h.errorf(op, ctx.Err())
	}
}

func (h *Holder) leave() { <-h.gate }

func (h *Holder) errorf(op string, err error) error {
	return errtext.Errorf("%s: %s %s: %w", h.cfg.Name, op, h.cfg.Path, err)
}

// Lock takes the lock, waiting for it when wait is true. When this
// participant already holds it, a reentrant lock counts one more hold.
//
// A waiter parks under its frame (Lock.Acquire): it is kept small, and
// the rest is in helpers.
func (h *Holder) Lock(ctx context.Context, wait bool) error {
	if err := h.enter(ctx, "lock"); err != nil {
		return err
	}
	defer h.leave()
	if cur := h.current(); cur != nil {
		return h.again(cur)
	}
	for {
		var (
			a   Acquired
			err error
		)
		if h.cfg.Core != nil {
			a, err = h.cfg.Core.Acquire(ctx, wait)
		} else {
			a, err = h.cfg.Acquire(ctx, wait)
		}
		if done, err := h.begin(ctx, &a, err); done {
			return err
		}
	}
}

// again is Lock on a lock this participant holds.
//
//go:noinline
func (h *Holder) again(cur *Hold) error {
	if cur.Lost() {
		return h.errorf("lock", h.endLost(cur))
	}
	if h.cfg.ErrHeld != nil {
		return h.errorf("lock", h.cfg.ErrHeld)
	}
	h.mu.Lock()
	h.count++
	h.mu.Unlock()
	return nil
}

// begin starts the hold of a, which Acquire returned with err. It reports
// false when the hold was lost before it began: then Lock acquires again.
//
//go:noinline
func (h *Holder) begin(ctx context.Context, a *Acquired, err error) (bool, error) {
	if errors.Is(err, ErrWouldWait) {
		return true, h.errorf("lock", h.cfg.ErrLocked)
	}
	if err != nil {
		return true, h.errorf("lock", err)
	}
	hold := NewHold(h.client, *a, HoldConfig{Lost: h.cfg.ErrLockLost, Released: h.cfg.ErrUnlocked, OnRevoke: h.cfg.OnRevoke,
		Recipe: h.cfg.Name, Path: h.cfg.Path, Ctx: ctx})
	if hold.Lost() {
		// The period Acquire confirmed ended in the meantime, or the
		// node was deleted.
		h.endLost(hold)
		if err := ctx.Err(); err != nil {
			return true, h.errorf("lock", err)
		}
		return false, nil
	}
	h.mu.Lock()
	h.hold, h.count, h.last = hold, 1, nil
	h.mu.Unlock()
	return true, nil
}

// Unlock releases one hold; the last one ends the hold and then deletes
// the node (Hold.End), even when ctx is done already (the delete then goes
// in the background, and the error wraps ctx's). A lost hold is ended whatever its count, and the
// error matches ErrLockLost. After the last Unlock nothing is held,
// whatever the error: if the delete's answer never came (the error wraps
// connection.ErrOutcomeUnknown, and the context's error when it ended
// first), the node is deleted in the background while its session lives.
func (h *Holder) Unlock(ctx context.Context) error {
	// A free gate is taken even with a context already done: an Unlock
	// deferred with the context of work that ran out of time must still
	// let the lock go (its delete then goes in the background), or the
	// lock would stay held until the session ends.
	select {
	case h.gate <- struct{}{}:
	default:
		if err := h.enter(ctx, "unlock"); err != nil {
			return err
		}
	}
	defer h.leave()
	cur := h.current()
	if cur == nil {
		return h.errorf("unlock", h.cfg.ErrNotLocked)
	}
	h.mu.Lock()
	if h.count > 1 && !cur.Lost() {
		h.count--
		h.mu.Unlock()
		return nil
	}
	h.hold, h.count, h.last = nil, 0, cur
	h.mu.Unlock()
	if err := cur.End(ctx, h.cfg.Release); err != nil {
		return h.errorf("unlock", err)
	}
	return nil
}

func (h *Holder) current() *Hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hold
}

// endLost drops a lost hold (the gate is held) and returns why it was
// lost. Its node was deleted, or is being deleted in the background while
// its session lives (Hold).
func (h *Holder) endLost(hold *Hold) error {
	h.mu.Lock()
	if h.hold == hold {
		h.hold, h.count, h.last = nil, 0, hold
	}
	h.mu.Unlock()
	return hold.End(context.Background(), nil) // lost: sends nothing
}

// Use runs f with the current hold while no Lock or Unlock of this Holder
// can change it (it takes the gate). It reports false, without calling f,
// when nothing is held or the hold is lost; a lost hold stays for this
// Holder's own Lock or Unlock to end, so that they report the loss
// (ErrLockLost), not a hold that never was. A read/write lock's downgrade
// uses it: the read node must be made while the write hold surely lasts.
func (h *Holder) Use(ctx context.Context, f func(a Acquired) error) (bool, error) {
	if err := h.enter(ctx, "use"); err != nil {
		return false, err
	}
	defer h.leave()
	cur := h.current()
	if cur == nil || cur.Lost() {
		return false, nil
	}
	return true, f(cur.Acquired)
}

// Guard returns a guard of the current hold (Hold.Guard). When nothing
// is held it returns a guard that Multi refuses with
// connection.ErrGuardFailed and the recipe's ErrNotLocked. A guard is of
// one hold: once that hold ends it fails, even if the lock is taken again.
func (h *Holder) Guard() *connection.Guard {
	if cur := h.current(); cur != nil {
		return cur.Guard()
	}
	notLocked := h.cfg.ErrNotLocked
	return connx.NewGuard(h.cfg.Path, nil, func() error { return notLocked })
}

// Held reports whether this participant has a hold (possibly a lost one
// that no Lock or Unlock has noticed yet: see Done).
func (h *Holder) Held() bool { return h.current() != nil }

// Token returns the fencing token of the current hold, or 0.
func (h *Holder) Token() int64 {
	if cur := h.current(); cur != nil {
		return cur.Token
	}
	return 0
}

// Node returns the path of the current hold's node, or "".
func (h *Holder) Node() string {
	if cur := h.current(); cur != nil {
		return cur.Path
	}
	return ""
}

// Done is closed when the current hold can no longer be trusted, or was
// released; when nothing is held it is already closed.
func (h *Holder) Done() <-chan struct{} {
	if cur := h.current(); cur != nil {
		return cur.Done()
	}
	return chanx.Closed
}

// Context is cancelled when Done closes, with the reason as its cause
// (Hold.Cause). When nothing is held it is already cancelled: with the
// cause of the hold that ended last (its Unlock's ErrUnlocked, or how it
// was lost), or with ErrNotLocked when there was none.
func (h *Holder) Context() context.Context {
	h.mu.Lock()
	cur, last := h.hold, h.last
	h.mu.Unlock()
	switch {
	case cur != nil:
		return cur.Context()
	case last != nil:
		return last.Context()
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(h.cfg.ErrNotLocked)
	return ctx
}

// Err is nil while Done is open, and then Context's cause, as a
// context's Err is: why the current hold ended (lost, and not yet noticed
// by Lock or Unlock), why the last one ended when nothing is held, or
// ErrNotLocked when there was none.
func (h *Holder) Err() error {
	h.mu.Lock()
	cur, last := h.hold, h.last
	h.mu.Unlock()
	switch {
	case cur != nil:
		return cur.Cause()
	case last != nil:
		return last.Cause()
	}
	return h.cfg.ErrNotLocked
}
