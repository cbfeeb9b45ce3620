package naive_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
)

func TestGuard(t *testing.T) {
	guardtest.Run(t, shared, guardtest.Kind{
		Take: func(ctx context.Context, t *testing.T, c *connection.Client, path string) (guardtest.Hold, func(context.Context) error) {
			l := newLock(t, c, path)
			if err := l.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			return l, l.Unlock
		},
		Fixed:    true,
		Released: naive.ErrUnlocked,
		Lost:     naive.ErrLockLost,
	})
}
