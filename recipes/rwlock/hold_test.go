package rwlock_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/holdtest"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

// side makes participants of one side of a read/write lock.
func side(write bool) func(t *testing.T, c *connection.Client, path string) holdtest.Participant {
	return func(t *testing.T, c *connection.Client, path string) holdtest.Participant {
		s := newRW(t, c, path).ReadLock()
		if write {
			s = newRW(t, c, path).WriteLock()
		}
		return func(ctx context.Context) (holdtest.Hold, func(context.Context) error, error) {
			return s, s.Unlock, s.Lock(ctx)
		}
	}
}

// TestSidesKeepTheHoldContract runs the contract every hold keeps
// (internal/testinfra/holdtest) on each side: writers exclude each other;
// readers share the lock, and a writer is their rival.
func TestSidesKeepTheHoldContract(t *testing.T) {
	t.Run("Write", func(t *testing.T) {
		holdtest.Run(t, shared, holdtest.Kind{
			New:      side(true),
			Released: rwlock.ErrUnlocked,
			Lost:     rwlock.ErrLockLost,
			NotHeld:  rwlock.ErrNotLocked,
		})
	})
	t.Run("Read", func(t *testing.T) {
		holdtest.Run(t, shared, holdtest.Kind{
			New:      side(false),
			Rival:    side(true),
			Released: rwlock.ErrUnlocked,
			Lost:     rwlock.ErrLockLost,
			NotHeld:  rwlock.ErrNotLocked,
		})
	})
}
