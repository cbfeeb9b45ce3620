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
package multilock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/lockcore"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Lock is one lock a Multi takes: a mutex, a side of a read/write lock, a
// naive lock, a semaphore's mutex. Its Client and Path name its znode on
// the server (Client().ServerPath(Path())), by which a Multi orders and
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
	// ErrLost is the cause of Context after one of the locks was lost.
	ErrLost = errors.New("multilock: a lock was lost")
)

// Multi is several locks taken as one. It is not reentrant.
type Multi struct {
	locks []Lock        // sorted by server path
	paths []string      // locks[i]'s server path
	gate  chan struct{} // one Lock or Unlock at a time

	mu   sync.Mutex // guards what follows
	held bool
	lost *lockcore.AnyLost // while held
}

// New returns a Multi of locks, which it will take in the order of their
// server paths. Two locks naming one znode, even through clients with
// different namespaces, make it return an error matching ErrDuplicate.
func New(locks ...Lock) (*Multi, error) {
	if len(locks) == 0 {
		return nil, fmt.Errorf("multilock: no locks: %w", connection.ErrInvalidOption)
	}
	type named struct {
		lock Lock
		path string
	}
	sorted := make([]named, len(locks))
	for i, l := range locks {
		if l == nil {
			return nil, fmt.Errorf("multilock: nil lock: %w", connection.ErrInvalidOption)
		}
		c := l.Client()
		if c == nil {
			return nil, fmt.Errorf("multilock: lock %s has no client: %w", l.Path(), connection.ErrInvalidOption)
		}
		sorted[i] = named{l, c.ServerPath(l.Path())}
	}
	slices.SortStableFunc(sorted, func(a, b named) int { return cmp.Compare(a.path, b.path) })
	m := &Multi{gate: make(chan struct{}, 1)}
	for i, n := range sorted {
		if i > 0 && n.path == sorted[i-1].path {
			return nil, fmt.Errorf("%w: %s", ErrDuplicate, n.path)
		}
		m.locks = append(m.locks, n.lock)
		m.paths = append(m.paths, n.path)
	}
	return m, nil
}

// Lock takes every lock, in server-path order, or none: on failure the ones
// taken are released in reverse order and the error wraps the failing
// lock's (ctx.Err() when ctx ended).
func (m *Multi) Lock(ctx context.Context) error {
	select {
	case m.gate <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("multilock: lock: %w", ctx.Err())
	}
	defer func() { <-m.gate }()
	if m.isHeld() {
		return ErrHeld
	}
	for i, l := range m.locks {
		if err := l.Lock(ctx); err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			for j := i - 1; j >= 0; j-- {
				_ = m.locks[j].Unlock(rctx)
			}
			return fmt.Errorf("multilock: lock %s: %w", m.paths[i], err)
		}
	}
	m.mu.Lock()
	m.held = true
	m.watch()
	m.mu.Unlock()
	return nil
}

func (m *Multi) isHeld() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held
}

// watch closes Done, and cancels Context, when any lock's hold ends.
func (m *Multi) watch() {
	m.lost = lockcore.NewAnyLost(nil)
	for i, l := range m.locks {
		m.lost.Add(l.Context(), fmt.Errorf("%w: %s", ErrLost, m.paths[i]))
	}
}

// Unlock releases every lock in reverse order, all of them even when some
// fail; the error joins the failures (a lost lock's wraps its recipe's
// lost error).
func (m *Multi) Unlock(ctx context.Context) error {
	select {
	case m.gate <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("multilock: unlock: %w", ctx.Err())
	}
	defer func() { <-m.gate }()
	m.mu.Lock()
	if !m.held {
		m.mu.Unlock()
		return ErrNotLocked
	}
	m.lost.Stop(errReleased)
	m.held = false
	m.mu.Unlock()
	var errs []error
	for i := len(m.locks) - 1; i >= 0; i-- {
		if err := m.locks[i].Unlock(ctx); err != nil {
			errs = append(errs, fmt.Errorf("multilock: unlock %s: %w", m.paths[i], err))
		}
	}
	return errors.Join(errs...)
}

var errReleased = errors.New("multilock: released")

// closedChan is what Done returns when nothing is held.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Done is closed when any of the locks is lost, or when Unlock starts;
// when the Multi does not hold, it is already closed.
func (m *Multi) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		return closedChan
	}
	return m.lost.Done()
}

// Context is cancelled when Done closes, or at Unlock.
func (m *Multi) Context() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(ErrNotLocked)
		return ctx
	}
	return m.lost.Context()
}

// Locks returns the locks in the order they are taken.
func (m *Multi) Locks() []Lock { return slices.Clone(m.locks) }
