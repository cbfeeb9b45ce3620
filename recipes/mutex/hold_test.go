package mutex_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/holdtest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// TestMutexKeepsTheHoldContract runs the contract every hold keeps
// (internal/testinfra/holdtest) on a Mutex.
func TestMutexKeepsTheHoldContract(t *testing.T) {
	holdtest.Run(t, shared, holdtest.Kind{
		New: func(t *testing.T, c *connection.Client, path string) holdtest.Participant {
			m := newMutex(t, c, path)
			return func(ctx context.Context) (holdtest.Hold, func(context.Context) error, error) {
				return m, m.Unlock, m.Lock(ctx)
			}
		},
		Released: mutex.ErrUnlocked,
		Lost:     mutex.ErrLockLost,
		NotHeld:  mutex.ErrNotLocked,
	})
}
