package barrier_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var zkShared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, zkShared, peertest.Cleanup) }

// The shared helpers, under the names these tests use.
var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
)

func newBarrier(t testing.TB, c *connection.Client, path string) *barrier.Barrier {
	t.Helper()
	b, err := barrier.New(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newDouble(t testing.TB, c *connection.Client, path string, members int) *barrier.Double {
	t.Helper()
	d, err := barrier.NewDouble(c, path, members)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
