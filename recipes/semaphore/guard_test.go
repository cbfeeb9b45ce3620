package semaphore_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

func TestGuardOfLease(t *testing.T) {
	guardtest.Run(t, shared, guardtest.Kind{
		Take: func(ctx context.Context, t *testing.T, c *connection.Client, path string) (guardtest.Hold, func(context.Context) error) {
			s, err := semaphore.New(c, path, 1)
			if err != nil {
				t.Fatal(err)
			}
			leases, err := s.Acquire(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			return leases[0], leases[0].Release
		},
		Released: semaphore.ErrReleased,
		Lost:     semaphore.ErrLeaseLost,
	})
}
