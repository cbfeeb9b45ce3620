package election_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

func TestGuardOfTerm(t *testing.T) {
	guardtest.Run(t, shared, guardtest.Kind{
		Take: func(ctx context.Context, t *testing.T, c *connection.Client, path string) (guardtest.Hold, func(context.Context) error) {
			e, err := election.New(c, path, connx.NewUUID())
			if err != nil {
				t.Fatal(err)
			}
			term, err := e.Campaign(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return term, term.Resign
		},
		Released: election.ErrResigned,
		Lost:     election.ErrTermLost,
	})
}
