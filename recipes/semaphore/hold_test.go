package semaphore_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/holdtest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// TestLeaseKeepsTheHoldContract runs the contract every hold keeps
// (internal/testinfra/holdtest) on a lease of a semaphore of one.
func TestLeaseKeepsTheHoldContract(t *testing.T) {
	holdtest.Run(t, shared, holdtest.Kind{
		New: func(t *testing.T, c *connection.Client, path string) holdtest.Participant {
			s := newSem(t, c, path, 1)
			return func(ctx context.Context) (holdtest.Hold, func(context.Context) error, error) {
				leases, err := s.Acquire(ctx, 1)
				if err != nil {
					return nil, nil, err
				}
				return leases[0], leases[0].Release, nil
			}
		},
		Released: semaphore.ErrReleased,
		Lost:     semaphore.ErrLeaseLost,
		NotHeld:  semaphore.ErrReleased,

		LostWaiterFails: true,
	})
}

// TestMutexKeepsTheHoldContract runs the contract on the semaphore's
// Mutex.
func TestMutexKeepsTheHoldContract(t *testing.T) {
	holdtest.Run(t, shared, holdtest.Kind{
		New: func(t *testing.T, c *connection.Client, path string) holdtest.Participant {
			m, err := semaphore.NewMutex(newSem(t, c, path, 1))
			if err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context) (holdtest.Hold, func(context.Context) error, error) {
				return m, m.Unlock, m.Lock(ctx)
			}
		},
		Released: semaphore.ErrReleased,
		Lost:     semaphore.ErrLeaseLost,
		NotHeld:  semaphore.ErrNotLocked,

		LostWaiterFails: true,
	})
}
