// Package naive is the herd-prone lock: one ephemeral node per lock, which
// every waiter watches. Each release wakes every waiter, and all of them
// race to create the node again — the "herd effect" ZooKeeper's recipe
// documentation warns about. It is kept on purpose, for comparison with
// recipes/mutex and for teaching; use the mutex for real work.
//
// It is still honest: Lock honours its context, the node is checked to
// belong to the current session, a create whose answer was lost is
// recognised as ours, and a hold has a lost-lock signal and a fencing
// token like the mutex. It is not reentrant, and not fair.
package naive

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Errors of the naive lock. Match them with errors.Is.
var (
	// ErrLocked is returned by TryLock when another participant holds the
	// lock.
	ErrLocked = errors.New("naive: locked by another participant")
	// ErrNotLocked is returned by Unlock when this Lock does not hold it.
	ErrNotLocked = errors.New("naive: not locked")
	// ErrLockLost is returned by Unlock when the session was lost before
	// the release.
	ErrLockLost = fmt.Errorf("naive: lock lost: %w", connection.ErrSessionLost)
)

// Lock is one participant of a naive lock: the node at path itself.
type Lock struct {
	client *connection.Client
	path   string
	data   []byte

	gate chan struct{} // one Lock or Unlock at a time
	mu   sync.Mutex
	hold *lockcore.Hold
}

// New returns a participant of the naive lock whose node is path.
func New(c *connection.Client, path string) (*Lock, error) {
	if c == nil {
		return nil, errors.New("naive: nil client")
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("naive: %w", err)
	}
	if path == "/" {
		return nil, fmt.Errorf("naive: %w: the root cannot be a lock", connection.ErrInvalidPath)
	}
	return &Lock{client: c, path: path, data: c.DefaultData(), gate: make(chan struct{}, 1)}, nil
}

// Lock blocks until this participant holds the lock or ctx is done.
func (l *Lock) Lock(ctx context.Context) error { return l.lock(ctx, true) }

// TryLock takes the lock if it is free, and otherwise returns an error
// matching ErrLocked.
func (l *Lock) TryLock(ctx context.Context) error { return l.lock(ctx, false) }

func (l *Lock) lock(ctx context.Context, wait bool) error {
	select {
	case l.gate <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("naive: lock %s: %w", l.path, ctx.Err())
	}
	defer func() { <-l.gate }()
	if l.Held() {
		return fmt.Errorf("naive: lock %s: already held (not reentrant)", l.path)
	}
	a, err := l.acquire(ctx, wait)
	if err != nil {
		return fmt.Errorf("naive: lock %s: %w", l.path, err)
	}
	h := lockcore.NewHold(l.client, a, ErrLockLost, nil)
	l.mu.Lock()
	l.hold = h
	l.mu.Unlock()
	return nil
}

func (l *Lock) acquire(ctx context.Context, wait bool) (lockcore.Acquired, error) {
	for {
		_, err := l.client.CreateAll(ctx, l.path, l.data, connection.Ephemeral)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return lockcore.Acquired{}, err
		}
		// Created, or it exists: whose is it? A create retried after a lost
		// answer finds its own node here.
		_, st, ch, err := l.client.GetW(ctx, l.path)
		if errors.Is(err, zk.ErrNoNode) {
			continue // released meanwhile: race for it again
		}
		if err != nil {
			return lockcore.Acquired{}, err
		}
		sess := l.client.Session()
		if sess != nil && st.EphemeralOwner == sess.ID() {
			return lockcore.Acquired{Path: l.path, Session: sess, Token: st.Czxid}, nil
		}
		if !wait {
			return lockcore.Acquired{}, ErrLocked
		}
		// Every waiter watches this one node: each release wakes them all.
		var done <-chan struct{}
		if sess != nil {
			done = sess.Done()
		}
		select {
		case <-ch:
		case <-done:
		case <-ctx.Done():
			return lockcore.Acquired{}, ctx.Err()
		}
	}
}

// Unlock releases the lock by deleting its node. It returns an error
// matching ErrNotLocked when this participant does not hold it, and one
// matching ErrLockLost when the session was lost first.
//
// The node has a fixed name, so the delete relies on ZooKeeper refusing
// requests of an expired session: an ephemeral node of a live session
// cannot have been replaced by another participant's.
func (l *Lock) Unlock(ctx context.Context) error {
	select {
	case l.gate <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("naive: unlock %s: %w", l.path, ctx.Err())
	}
	defer func() { <-l.gate }()
	l.mu.Lock()
	h := l.hold
	l.mu.Unlock()
	if h == nil {
		return fmt.Errorf("naive: unlock %s: %w", l.path, ErrNotLocked)
	}
	core := lockcore.Lock{Client: l.client}
	err := core.Release(ctx, h.Acquired)
	if err != nil && !errors.Is(err, connection.ErrSessionLost) {
		return fmt.Errorf("naive: unlock %s: %w", l.path, err)
	}
	h.Stop()
	l.mu.Lock()
	l.hold = nil
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("naive: unlock %s: %w", l.path, ErrLockLost)
	}
	return nil
}

// Held reports whether this participant holds the lock.
func (l *Lock) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hold != nil
}

// Token returns the czxid of the lock node of the current hold, or 0.
func (l *Lock) Token() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return 0
	}
	return l.hold.Token
}

// Done is closed when the current hold can no longer be trusted, or was
// released; when nothing is held it is already closed.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return l.hold.Done()
}
