package mutex_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(shared.Wrap(runFunc(func() int {
		defer peertest.Cleanup()
		return m.Run()
	})))
}

type runFunc func() int

func (f runFunc) Run() int { return f() }

func open(t testing.TB, servers []string, opts ...connection.Option) *connection.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, servers, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newMutex(t testing.TB, c *connection.Client, path string, opts ...mutex.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
