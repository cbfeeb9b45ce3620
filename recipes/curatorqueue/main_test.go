package curatorqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
)

func newSimple(t testing.TB, c *connection.Client, path string) *curatorqueue.Simple {
	t.Helper()
	q, err := curatorqueue.NewSimple(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// newQueue returns a queue of variant "plain", "priority", "delay" or
// "id", closed when the test ends.
func newQueue(t testing.TB, c *connection.Client, path, variant string, opts ...curatorqueue.Option) *curatorqueue.Queue {
	t.Helper()
	mk := map[string]func(*connection.Client, string, ...curatorqueue.Option) (*curatorqueue.Queue, error){
		"plain": curatorqueue.New, "priority": curatorqueue.NewPriority, "delay": curatorqueue.NewDelay, "id": curatorqueue.NewID,
	}[variant]
	q, err := mk(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := q.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return q
}
