package watch_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
)

// ev is an event as the tests write it.
func ev(t watch.EventType, path string) watch.Event { return watch.Event{Type: t, Path: path} }

// expectEvents reads from w exactly want, in order, and then nothing for
// a short while.
func expectEvents(t *testing.T, w *watch.Watcher, want ...watch.Event) {
	t.Helper()
	for i, e := range want {
		select {
		case got, ok := <-w.Events():
			if !ok {
				t.Fatalf("events closed before event %d (%v %s): %v", i, e.Type, e.Path, w.Err())
			}
			if got != e {
				t.Fatalf("event %d = %v %s (missed %d), want %v %s", i, got.Type, got.Path, got.Missed, e.Type, e.Path)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event %d (%v %s) within 10s", i, e.Type, e.Path)
		}
	}
	expectQuiet(t, w)
}

// expectQuiet fails if w delivers an event within a short while.
func expectQuiet(t *testing.T, w *watch.Watcher) {
	t.Helper()
	select {
	case got, ok := <-w.Events():
		if ok {
			t.Fatalf("unexpected event %v %s", got.Type, got.Path)
		}
	case <-time.After(150 * time.Millisecond):
	}
}

// serverWatches is what the servers of ens hold for session id.
func serverWatches(t *testing.T, ens *zktest.Ensemble, id int64, want int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, "the servers' watches", func() error {
		if n := testkit.ServerWatches(t, ens, id); n != want {
			return fmt.Errorf("servers hold %d watches of session %#x, want %d", n, id, want)
		}
		return nil
	})
}
