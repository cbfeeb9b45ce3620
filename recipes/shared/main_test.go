package shared_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var zkShared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, zkShared, peertest.Cleanup) }

// The shared helpers, under the names these tests use.
var (
	open   = testkit.Open
	ctxFor = testkit.Ctx

	wantGuardFailed = testkit.WantGuardFailed
)

func newCounter(t testing.TB, c *connection.Client, path string, opts ...shared.Option) *shared.Counter {
	t.Helper()
	cn, err := shared.NewCounter(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cn.Close(context.Background()) })
	return cn
}
