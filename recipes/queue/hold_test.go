package queue_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/holdtest"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// TestTakenItemKeepsTheHoldContract runs the contract every hold keeps
// (internal/testinfra/holdtest) on the take of a queue's one item, whose
// taken node is at a fixed path: a worker takes it and releases it back.
func TestTakenItemKeepsTheHoldContract(t *testing.T) {
	holdtest.Run(t, shared, holdtest.Kind{
		Setup: func(ctx context.Context, t *testing.T, c *connection.Client, path string) {
			if err := newQueue(t, c, path).Put(ctx, []byte("item")); err != nil {
				t.Fatal(err)
			}
		},
		New: func(t *testing.T, c *connection.Client, path string) holdtest.Participant {
			q := newQueue(t, c, path)
			return func(ctx context.Context) (holdtest.Hold, func(context.Context) error, error) {
				it, err := q.Take(ctx)
				if err != nil {
					return nil, nil, err
				}
				return it, it.Release, nil
			}
		},
		Fixed:    true,
		Released: queue.ErrFinished,
		Lost:     queue.ErrItemLost,
		NotHeld:  queue.ErrFinished,
	})
}
