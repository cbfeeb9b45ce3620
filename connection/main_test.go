package connection_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { goleak.VerifyTestMain(shared.Wrap(m)) }

// open connects a client for the test and closes it when the test ends.
func open(t *testing.T, servers []string, opts ...connection.Option) *connection.Client {
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

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// expect reads the next states from ch and compares them with want.
func expect(t *testing.T, ch <-chan connection.State, timeout time.Duration, want ...connection.State) {
	t.Helper()
	deadline := time.After(timeout)
	for i, w := range want {
		select {
		case got, ok := <-ch:
			if !ok {
				t.Fatalf("listener closed before state %d (%v)", i, w)
			}
			if got != w {
				t.Fatalf("state %d = %v, want %v (sequence %v)", i, got, w, want)
			}
		case <-deadline:
			t.Fatalf("no state %d (%v) within %v", i, w, timeout)
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
