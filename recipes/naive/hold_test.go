package naive_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/holdtest"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
)

// TestLockKeepsTheHoldContract runs the contract every hold keeps
// (internal/testinfra/holdtest) on a naive Lock, whose node is at a fixed
// path.
func TestLockKeepsTheHoldContract(t *testing.T) {
	holdtest.Run(t, shared, holdtest.Kind{
		New: func(t *testing.T, c *connection.Client, path string) holdtest.Participant {
			l := newLock(t, c, path)
			return func(ctx context.Context) (holdtest.Hold, func(context.Context) error, error) {
				return l, l.Unlock, l.Lock(ctx)
			}
		},
		Fixed:    true,
		Released: naive.ErrUnlocked,
		Lost:     naive.ErrLockLost,
		NotHeld:  naive.ErrNotLocked,
	})
}
