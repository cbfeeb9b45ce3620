package semaphore

import (
	"context"
	"errors"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
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
// it returns ErrHeld. Its hold keeps the rules of every lock's
// (lockcore.Holder); the hold is a lease's, and its errors the lease's.
type Mutex struct {
	sem *Semaphore
	h   *lockcore.Holder
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
	m := &Mutex{sem: sem}
	m.h = lockcore.NewHolder(sem.client, lockcore.HolderConfig{
		Name:    "semaphore",
		Path:    sem.path,
		Acquire: m.acquire,
		Release: func(ctx context.Context, a lockcore.Acquired) error {
			return lockcore.Release(ctx, sem.client, a)
		},
		ErrLocked:    ErrLocked,
		ErrNotLocked: ErrNotLocked,
		ErrLockLost:  ErrLeaseLost,
		ErrUnlocked:  ErrReleased,
		ErrHeld:      ErrHeld,
	})
	return m, nil
}

// acquire is the Holder's Acquire: the lease, granted and confirmed (the
// Holder starts its hold).
func (m *Mutex) acquire(ctx context.Context, wait bool) (lockcore.Acquired, error) {
	leases, err := m.sem.grant(ctx, 1, wait)
	if errors.Is(err, ErrNoLeases) {
		return lockcore.Acquired{}, lockcore.ErrWouldWait
	}
	if err != nil {
		return lockcore.Acquired{}, err
	}
	l := leases[0]
	a, err := lockcore.Confirm(ctx, m.sem.client, l.a)
	if errors.Is(err, lockcore.ErrNodeGone) {
		err = errtext.Errorf("%w: %w", ErrLeaseLost, err)
	}
	if err != nil {
		l.drop()
		return lockcore.Acquired{}, err
	}
	return a, nil
}

// Path returns the semaphore's path.
func (m *Mutex) Path() string { return m.sem.path }

// Client returns the client the semaphore works through.
func (m *Mutex) Client() *connection.Client { return m.sem.client }

// Lock blocks until it holds the lease or ctx is done.
func (m *Mutex) Lock(ctx context.Context) error { return m.h.Lock(ctx, true) }

// TryLock takes the lease if it is free, and otherwise returns an error
// matching ErrLocked.
func (m *Mutex) TryLock(ctx context.Context) error { return m.h.Lock(ctx, false) }

// Unlock releases the lease; nothing is held when it returns, whatever
// the error (see Lease.Release). A lost lease's error matches ErrLeaseLost.
func (m *Mutex) Unlock(ctx context.Context) error { return m.h.Unlock(ctx) }

// Done is closed when the hold is lost or released; already closed when
// nothing is held.
func (m *Mutex) Done() <-chan struct{} { return m.h.Done() }

// Context is the lease's context, cancelled when Done closes with Err as
// its cause. When nothing is held it is already cancelled: with the cause
// of the last lease's end, or with ErrNotLocked when there was none.
func (m *Mutex) Context() context.Context { return m.h.Context() }

// Err returns nil while the lease lasts, and then why it ended (see
// Lease.Err): ErrReleased after Unlock, or ErrLeaseLost and what
// happened. When nothing is held it says why the last lease ended, or
// matches ErrNotLocked if there was none.
func (m *Mutex) Err() error { return m.h.Err() }

// Guard returns the lease's guard (Lease.Guard); when nothing is held, a
// guard that Multi refuses with connection.ErrGuardFailed and
// ErrNotLocked.
func (m *Mutex) Guard() *connection.Guard { return m.h.Guard() }

// Token is the lease's fencing token, or 0.
func (m *Mutex) Token() int64 { return m.h.Token() }
