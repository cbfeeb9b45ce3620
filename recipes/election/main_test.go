package election_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
)

func newElection(t testing.TB, c *connection.Client, path, id string, opts ...election.Option) *election.Election {
	t.Helper()
	e, err := election.New(c, path, id, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
