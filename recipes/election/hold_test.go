package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/holdtest"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

// TestTermKeepsTheHoldContract runs the contract every hold keeps
// (internal/testinfra/holdtest) on an election's term: a candidate
// campaigns and resigns.
func TestTermKeepsTheHoldContract(t *testing.T) {
	holdtest.Run(t, shared, holdtest.Kind{
		New: func(t *testing.T, c *connection.Client, path string) holdtest.Participant {
			e := newElection(t, c, path, connx.NewUUID())
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = e.Close(ctx)
			})
			return func(ctx context.Context) (holdtest.Hold, func(context.Context) error, error) {
				term, err := e.Campaign(ctx)
				if err != nil {
					return nil, nil, err
				}
				return term, term.Resign, nil
			}
		},
		Released: election.ErrResigned,
		Lost:     election.ErrTermLost,
		NotHeld:  election.ErrResigned,
	})
}
