package queue_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

func TestGuardOfTakenItem(t *testing.T) {
	guardtest.Run(t, shared, guardtest.Kind{
		Setup: func(ctx context.Context, t *testing.T, c *connection.Client, path string) {
			if err := newQueue(t, c, path).Put(ctx, []byte("item")); err != nil {
				t.Fatal(err)
			}
		},
		Take: func(ctx context.Context, t *testing.T, c *connection.Client, path string) (guardtest.Hold, func(context.Context) error) {
			it, err := newQueue(t, c, path).Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return it, it.Release
		},
		Fixed:    true,
		Released: queue.ErrFinished,
		Lost:     queue.ErrItemLost,
	})
}
