// Package multilock takes several distributed locks as one: all or none,
// in one order every participant shares, under one context, released in
// reverse, with one lost-lock signal — Curator's InterProcessMultiLock,
// without its deadlock.
//
// Curator takes the locks in the order it was given them, so two
// participants that list the same locks in different orders can deadlock;
// and it gives each lock the whole timeout. A Multi sorts its locks by
// server path — the znode's path on the server, the client's namespace
// joined with the lock's path — so every participant takes any two locks
// in the same order, whatever namespaces its clients have (no cycle can
// form: a participant holding a lock only ever waits for one with a
// greater server path), and all the waits share the caller's context.
//
// A Multi holds only while every one of its locks does. Lock checks every
// hold before it returns, and stops waiting as soon as a lock it took is
// lost; Done closes the moment any lock's hold ends, and at the start of
// Unlock, before any release is sent.
package multilock

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Lock is one lock a Multi takes: a mutex, a side of a read/write lock, a
// naive lock, a semaphore's mutex. Its Client and Path name its znode on
// the server (Path() under its Client's namespace), by which a Multi orders and
// compares its locks. Context is the current hold's, cancelled when the
// hold ends; a Multi watches it, through its AfterFunc method where it has
// one (the recipes' holds do), so that the Multi's Done closes with it.
type Lock interface {
	Client() *connection.Client
	Path() string
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Done() <-chan struct{}
	Context() context.Context
}

// Errors of the multi-lock. Match them with errors.Is.
var (
	// ErrDuplicate is returned by New when two locks name one znode (the
	// same server path): a participant would wait for itself.
	ErrDuplicate = errors.New("multilock: two locks on one path")
	// ErrNotLocked is returned by Unlock when the Multi does not hold.
	ErrNotLocked = errors.New("multilock: not locked")
	// ErrHeld is returned by Lock when the Multi already holds.
	ErrHeld = errors.New("multilock: already held")
	// ErrLost is the cause of Context after one of the locks was lost, and
	// what Lock's error matches when a lock it took was lost before it
	// could return. The cause also wraps the lost lock's own (its Err):
	// mutex.ErrLockLost and connection.ErrSuspended, say.
	ErrLost = errors.New("multilock: a lock was lost")
	// ErrUnlocked is the Err, and the Context's cause, of a hold that
	// Unlock ended.
	ErrUnlocked = errors.New("multilock: unlocked")
)

// releaseTimeout bounds the releases a failed Lock makes, and an Unlock
// whose context ended before it could send one.
const releaseTimeout = 10 * time.Second

// Multi is several locks taken as one. It is not reentrant.
type Multi struct {
	locks  []Lock        // sorted by server path
	paths  []string      // locks[i]'s server path
	causes []error       // Context's cause when locks[i] is lost
	gate   chan struct{} // one Lock or Unlock at a time

	mu   sync.Mutex
	lost *lockcore.AnyLost // the signal of the current hold; nil when not held
	last *lockcore.AnyLost // the signal of the hold that ended last, while none is held
}

// New returns a Multi of locks, which it will take in the order of their
// server paths. Two locks naming one znode, even through clients with
// different namespaces, make it return an error matching ErrDuplicate.
func New(locks ...Lock) (*Multi, error) {
	if len(locks) == 0 {
		return nil, errtext.Errorf("multilock: no locks: %w", connection.ErrInvalidOption)
	}
	type named struct {
		lock Lock
		path string
	}
	sorted := make([]named, len(locks))
	for i, l := range locks {
		if l == nil {
			return nil, errtext.Errorf("multilock: nil lock: %w", connection.ErrInvalidOption)
		}
		c := l.Client()
		if c == nil {
			return nil, errtext.Errorf("multilock: lock %s has no client: %w", l.Path(), connection.ErrInvalidOption)
		}
		sorted[i] = named{l, connx.Of(c).ServerPath(l.Path())}
	}
	slices.SortStableFunc(sorted, func(a, b named) int { return cmp.Compare(a.path, b.path) })
	m := &Multi{gate: make(chan struct{}, 1)}
	for i, n := range sorted {
		if i > 0 && n.path == sorted[i-1].path {
			return nil, errtext.Errorf("%w: %s", ErrDuplicate, n.path)
		}
		m.locks = append(m.locks, n.lock)
		m.paths = append(m.paths, n.path)
		m.causes = append(m.causes, errtext.Errorf("%w: %s", ErrLost, n.path))
	}
	return m, nil
}

// enter takes the gate. A free gate is taken even when ctx has ended, so
// that Unlock with an ended context still ends the hold.
func (m *Multi) enter(ctx context.Context, op string) error {
	select {
	case m.gate <- struct{}{}:
		return nil
	default:
	}
	select {
	case m.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return errtext.Errorf("multilock: %s: %w", op, ctx.Err())
	}
}

func (m *Multi) leave() { <-m.gate }

func (m *Multi) current() *lockcore.AnyLost {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
}

// Lock takes every lock, in server-path order, or none: on failure the
// ones taken are released in reverse order and the error wraps the
// failing lock's (ctx.Err() when ctx ended). Should a lock it took be lost
// before Lock can return (its session expired while Lock waited for the
// next, say), Lock stops waiting, releases the others and returns an
// error that matches ErrLost and the lost lock's own error (its Context's
// cause, such as mutex.ErrLockLost): it never returns nil unless every
// hold is intact.
func (m *Multi) Lock(ctx context.Context) error {
	if err := m.enter(ctx, "lock"); err != nil {
		return err
	}
	defer m.leave()
	if m.current() != nil {
		return ErrHeld
	}
	// The waits end with ctx, and as soon as a lock already taken is
	// lost: the Multi could not hold then.
	wait, stopWaiting := context.WithCancelCause(ctx)
	defer stopWaiting(nil)
	lost := lockcore.NewAnyLost(stopWaiting)
	holds := make([]context.Context, 0, len(m.locks))
	for i, l := range m.locks {
		if err := l.Lock(wait); err != nil {
			if j := m.firstLost(lost, holds); j >= 0 {
				return m.failLost(ctx, lost, holds, j)
			}
			lost.Stop(err)
			m.release(ctx, len(holds))
			return errtext.Errorf("multilock: lock %s: %w", m.paths[i], err)
		}
		hold := l.Context()
		holds = append(holds, hold)
		lost.Add(hold, m.causes[i])
	}
	// Every hold is watched now: a loss from here on closes Done. One
	// before is seen here, also by the holds' own contexts, which end
	// before context.AfterFunc's goroutine (the fallback) passes it on.
	if j := m.firstLost(lost, holds); j >= 0 {
		return m.failLost(ctx, lost, holds, j)
	}
	m.mu.Lock()
	m.lost, m.last = lost, nil
	m.mu.Unlock()
	return nil
}

// firstLost returns the index of the lock whose hold (of holds, the ones
// Lock took so far) has ended, or -1.
func (m *Multi) firstLost(lost *lockcore.AnyLost, holds []context.Context) int {
	if cause := context.Cause(lost.Context()); cause != nil {
		if j := slices.IndexFunc(m.causes, func(c error) bool { return errors.Is(cause, c) }); j >= 0 && j < len(holds) {
			return j
		}
	}
	for j, h := range holds {
		if h.Err() != nil {
			return j
		}
	}
	return -1
}

// failLost ends a Lock one of whose locks, j, was lost: it releases the
// ones taken and returns the error that says so.
func (m *Multi) failLost(ctx context.Context, lost *lockcore.AnyLost, holds []context.Context, j int) error {
	cause := context.Cause(holds[j]) // read before the release says "released"
	lost.Stop(m.causes[j])
	errs := m.release(ctx, len(holds))
	if cause == nil {
		cause = errs[j]
	}
	if cause == nil {
		cause = ErrLost
	}
	return &lostError{path: m.paths[j], cause: cause}
}

// release releases the first n locks in reverse order, with a context of
// its own (ctx may have ended): the cleanup of a failed Lock. It returns
// their errors, by index.
func (m *Multi) release(ctx context.Context, n int) []error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	errs := make([]error, n)
	for i := n - 1; i >= 0; i-- {
		errs[i] = m.locks[i].Unlock(rctx)
	}
	return errs
}

// lostError is Lock's error when a lock it took was lost: it matches
// ErrLost and the lock's own cause.
type lostError struct {
	path  string
	cause error
}

func (e *lostError) Error() string {
	if e.cause == ErrLost {
		return "multilock: lock " + e.path + ": lost"
	}
	return errtext.NameOnce("multilock: lock " + e.path + ": " + e.cause.Error())
}

func (e *lostError) Unwrap() []error { return []error{ErrLost, e.cause} }

// Unlock ends the hold and releases every lock in reverse order, all of
// them even when some fail. Done is closed, and Context cancelled, before
// any release is sent: whoever takes one of the locks next finds them so.
// Afterwards the Multi does not hold, whatever the answers; the error
// joins the locks' (a lost lock's wraps its recipe's lost error). A lock
// whose release could not even be sent because ctx had ended is released
// with a context of its own (bounded by ten seconds), so that none is
// left held.
func (m *Multi) Unlock(ctx context.Context) error {
	if err := m.enter(ctx, "unlock"); err != nil {
		return err
	}
	defer m.leave()
	m.mu.Lock()
	lost := m.lost
	if lost != nil {
		m.lost, m.last = nil, lost
	}
	m.mu.Unlock()
	if lost == nil {
		return ErrNotLocked
	}
	lost.Stop(ErrUnlocked)
	var errs []error
	for i := len(m.locks) - 1; i >= 0; i-- {
		if err := unlock(ctx, m.locks[i]); err != nil {
			errs = append(errs, errtext.Errorf("multilock: unlock %s: %w", m.paths[i], err))
		}
	}
	return errors.Join(errs...)
}

// unlock releases l. If that fails and l still holds — its release was
// not sent (ctx had ended), or its recipe keeps a hold whose release
// failed — it tries once more with a context of its own.
func unlock(ctx context.Context, l Lock) error {
	err := l.Unlock(ctx)
	if err == nil || closed(l.Done()) {
		return err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return l.Unlock(rctx)
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Done is closed when any of the locks' holds ends — in the goroutine
// that ends it, before that lock's own Done closes, where the lock's
// Context has an AfterFunc method — or when Unlock starts; when the Multi
// does not hold, it is already closed.
func (m *Multi) Done() <-chan struct{} {
	if lost := m.current(); lost != nil {
		return lost.Done()
	}
	return chanx.Closed
}

// Context is cancelled when Done closes, with Err as its cause. When the
// Multi does not hold, it is already cancelled: with the cause of the
// last hold's end, or with ErrNotLocked when there was none.
func (m *Multi) Context() context.Context {
	m.mu.Lock()
	lost, last := m.lost, m.last
	m.mu.Unlock()
	switch {
	case lost != nil:
		return lost.Context()
	case last != nil:
		return last.Context()
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrNotLocked)
	return ctx
}

// Err returns nil while the Multi holds every lock, and then why its hold
// ended, as Context's cause does: ErrUnlocked after Unlock, or, when a
// lock was lost, an error matching ErrLost, with the lost lock's server
// path, and that lock's own Err — its recipe's lost error and what
// happened: connection.ErrSuspended, connection.ErrSessionLost or
// connection.ErrNodeDeleted. When the Multi does not hold it says why the
// last hold ended, or matches ErrNotLocked if there was none.
func (m *Multi) Err() error { return context.Cause(m.Context()) }

// Locks returns the locks in the order they are taken.
func (m *Multi) Locks() []Lock { return slices.Clone(m.locks) }

// Guards returns, for connection.Client.Multi, a guard of each lock's
// current hold (mutex.Mutex.Guard...), in the order the locks are taken:
// the transaction commits only while every one of the holds lasts. Put
// them into the transaction with its ops:
//
//	_, err := client.Multi(ctx, append(m.Guards(), &zk.SetDataRequest{Path: p, Data: v, Version: -1})...)
//
// One transaction runs in one session, so the locks must be of one
// client; Multi refuses locks of several with connection.ErrInvalidOption.
// When the Multi does not hold, the one guard returned makes Multi fail
// with connection.ErrGuardFailed and ErrNotLocked; so does a lock that
// has no Guard method (not one of this module's), with
// connection.ErrInvalidOption.
func (m *Multi) Guards() []any {
	if m.current() == nil {
		return []any{connx.NewGuard(m.locks[0].Path(), nil, func() error { return ErrNotLocked })}
	}
	out := make([]any, len(m.locks))
	for i, l := range m.locks {
		if g, ok := l.(interface{ Guard() *connection.Guard }); ok {
			out[i] = g.Guard()
			continue
		}
		err := errtext.Errorf("%w: lock %s has no Guard method", connection.ErrInvalidOption, m.paths[i])
		out[i] = connx.NewGuard(l.Path(), nil, func() error { return err })
	}
	return out
}
