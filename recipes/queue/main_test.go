package queue_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
)

func newQueue(t testing.TB, c *connection.Client, path string, opts ...queue.Option) *queue.Queue {
	t.Helper()
	q, err := queue.New(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
