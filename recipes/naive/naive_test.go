package naive_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared) }

// The shared helpers, under the names these tests use.
var (
	open = testkit.Open
)

func newLock(t *testing.T, c *connection.Client, path string) *naive.Lock {
	t.Helper()
	l, err := naive.New(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLockTryLockUnlock(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ac := open(t, ens.Servers())
	a, b := newLock(t, ac, root+"/l"), newLock(t, open(t, ens.Servers()), root+"/l")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if _, err := naive.New(ac, "bad/path"); !errors.Is(err, connection.ErrInvalidPath) {
		t.Fatalf("New(bad/path) = %v", err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, naive.ErrNotLocked) {
		t.Fatalf("Unlock before Lock = %v", err)
	}
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	_, st, err := ac.Get(ctx, root+"/l")
	if err != nil || st.EphemeralOwner != ac.Session().ID() || st.Czxid != a.Token() {
		t.Fatalf("node owner/czxid: %+v %v", st, err)
	}
	if err := b.TryLock(ctx); !errors.Is(err, naive.ErrLocked) {
		t.Fatalf("TryLock of a held lock = %v, want ErrLocked", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if err := b.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with a short context = %v", err)
	}
	done := a.Done()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	default:
		t.Fatal("Done open after Unlock")
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHerd: one release of the naive lock wakes every waiter.
func TestHerd(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	const waiters = 50
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := open(t, ens.Servers())
	holder := newLock(t, hc, root+"/l")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	clients := make([]*connection.Client, waiters)
	errs := make(chan error, waiters)
	for i := range waiters {
		clients[i] = open(t, ens.Servers())
		l := newLock(t, clients[i], root+"/l")
		go func() {
			if err := l.Lock(ctx); err != nil {
				errs <- err
				return
			}
			errs <- l.Unlock(ctx)
		}()
	}
	// Every waiter has its watch on the node once the server counts them.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := zktest.FourLetter(ens.Servers()[0], "wchp", time.Second)
		if err == nil && countWatchers(out, root+"/l") >= waiters {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiters never all watched the node: %v\n%s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := make([]int64, waiters)
	for i, c := range clients {
		before[i] = c.Stats().Notifications
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	woken := func() int {
		n := 0
		for i, c := range clients {
			if c.Stats().Notifications > before[i] {
				n++
			}
		}
		return n
	}
	deadline = time.Now().Add(10 * time.Second)
	for woken() < waiters && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := woken(); n != waiters {
		t.Fatalf("one release woke %d of %d waiters; the naive lock wakes them all", n, waiters)
	}
	t.Logf("one release of the naive lock woke all %d waiters", waiters)
	for range waiters {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// countWatchers counts the sessions listed under path in a wchp answer:
// the path on a line of its own, then one session per indented line.
func countWatchers(wchp, path string) int {
	n, in := 0, false
	for _, line := range strings.Split(wchp, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == path:
			in = true
		case strings.HasPrefix(line, "/"):
			in = false
		case in && line != "":
			n++
		}
	}
	return n
}
