package semaphore

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Errors of the semaphore-backed mutex. Match them with errors.Is.
var (
	// ErrLocked is returned by Mutex.TryLock when the lock is held.
	ErrLocked = errors.New("semaphore: mutex locked by another participant")
	// ErrNotLocked is returned by Mutex.Unlock when it does not hold.
	ErrNotLocked = errors.New("semaphore: mutex not locked")
	// ErrHeld is returned by Mutex.Lock when it holds already: the mutex
	// is not reentrant.
	ErrHeld = errors.New("semaphore: mutex already held (not reentrant)")
)

// Mutex is a non-reentrant lock on a semaphore of one lease: Curator's
// InterProcessSemaphoreMutex, on the same znodes. Unlike the reentrant
// mutex (recipes/mutex), a second Lock on the same Mutex does not succeed:
// it returns ErrHeld.
type Mutex struct {
	sem *Semaphore

	mu    sync.Mutex
	lease *Lease
	last  *Lease // the lease Unlock ended last, while none is held
}

// NewMutex returns a mutex on sem, which must have exactly one lease (a
// fixed maximum of 1).
func NewMutex(sem *Semaphore) (*Mutex, error) {
	if sem == nil {
		return nil, errtext.Errorf("semaphore: nil semaphore: %w", connection.ErrInvalidOption)
	}
	if sem.max != 1 || sem.countPath != "" {
		return nil, errtext.Errorf("semaphore: %w: a mutex needs a semaphore of exactly one lease, not %d", connection.ErrInvalidOption, sem.max)
	}
	return &Mutex{sem: sem}, nil
}

// Path returns the semaphore's path.
func (m *Mutex) Path() string { return m.sem.path }

// Client returns the client the semaphore works through.
func (m *Mutex) Client() *connection.Client { return m.sem.client }

// Lock blocks until it holds the lease or ctx is done.
func (m *Mutex) Lock(ctx context.Context) error { return m.lock(ctx, true) }

// TryLock takes the lease if it is free, and otherwise returns an error
// matching ErrLocked.
func (m *Mutex) TryLock(ctx context.Context) error { return m.lock(ctx, false) }

func (m *Mutex) lock(ctx context.Context, wait bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease != nil {
		return errtext.Errorf("semaphore: lock %s: %w", m.sem.path, ErrHeld)
	}
	var got []*Lease
	var err error
	if wait {
		got, err = m.sem.Acquire(ctx, 1)
	} else {
		got, err = m.sem.TryAcquire(ctx, 1)
	}
	if errors.Is(err, ErrNoLeases) {
		return errtext.Errorf("semaphore: lock %s: %w", m.sem.path, ErrLocked)
	}
	if err != nil {
		return err
	}
	m.lease, m.last = got[0], nil
	return nil
}

// Unlock releases the lease; nothing is held when it returns, whatever
// the error (see Lease.Release). A lost lease's error matches ErrLeaseLost.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return errtext.Errorf("semaphore: unlock %s: %w", m.sem.path, ErrNotLocked)
	}
	err := m.lease.Release(ctx)
	m.lease, m.last = nil, m.lease // over, whatever the answer (Lease.Release)
	return err
}

// Done is closed when the hold is lost or released; already closed when
// nothing is held.
func (m *Mutex) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return chanx.Closed
	}
	return m.lease.Done()
}

// Context is the lease's context, cancelled when Done closes with Err as
// its cause. When nothing is held it is already cancelled: with the cause
// of the last lease's end, or with ErrNotLocked when there was none.
func (m *Mutex) Context() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.lease != nil:
		return m.lease.Context()
	case m.last != nil:
		return m.last.Context()
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrNotLocked)
	return ctx
}

// Err returns nil while the lease lasts, and then why it ended (see
// Lease.Err): ErrReleased after Unlock, or ErrLeaseLost and what
// happened. When nothing is held it says why the last lease ended, or
// matches ErrNotLocked if there was none.
func (m *Mutex) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.lease != nil:
		return m.lease.Err()
	case m.last != nil:
		return m.last.Err()
	}
	return ErrNotLocked
}

// Guard returns the lease's guard (Lease.Guard); when nothing is held, a
// guard that Multi refuses with connection.ErrGuardFailed and
// ErrNotLocked.
func (m *Mutex) Guard() *connection.Guard {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return connx.NewGuard(m.sem.path, nil, func() error { return ErrNotLocked })
	}
	return m.lease.Guard()
}

// Token is the lease's fencing token, or 0.
func (m *Mutex) Token() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return 0
	}
	return m.lease.Token()
}
