package mutex_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

// The shared helpers, under the names these tests use.
var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
)

func newMutex(t testing.TB, c *connection.Client, path string, opts ...mutex.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
