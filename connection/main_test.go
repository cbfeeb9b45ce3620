package connection_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared) }

// The shared helpers, under the names these tests use.
var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
)

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
