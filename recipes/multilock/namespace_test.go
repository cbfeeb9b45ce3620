package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// waitContenders waits until the locks at paths (seen through c) have n
// contenders in all: holders and waiters.
func waitContenders(t *testing.T, c *connection.Client, n int, paths ...string) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d contenders on %v", n, paths), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got := 0
		for _, p := range paths {
			ps, err := mutex.Participants(ctx, c, p)
			if err != nil {
				return err
			}
			got += len(ps)
		}
		if got != n {
			return fmt.Errorf("%d contenders", got)
		}
		return nil
	})
}

// TestNamespacesShareOneOrder: two participants name the same two znodes,
// X = <root>/a/z and Y = <root>/b/a, through clients with different
// namespaces. The first sees them as /a/z and /b/a (namespace <root>);
// the second as /z (namespace <root>/a) and /a (namespace <root>/b), so
// in the order of the paths its clients see it would take Y before X, and
// the first X before Y. Both wait behind holders of X and Y; when those
// let go, a Multi that orders by client path gives X to the first and Y
// to the second, and each waits for the other for ever. Ordered by server
// path, both take X first: one holds both, then the other.
func TestNamespacesShareOneOrder(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x, y := root+"/a/z", root+"/b/a"

	plain := open(t, ens.Servers())
	holdX, holdY := mu(t, plain, x), mu(t, plain, y)
	for _, h := range []*mutex.Mutex{holdX, holdY} {
		if err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}

	first := open(t, ens.Servers(), connection.WithNamespace(root))
	m1, err := multilock.New(mu(t, first, "/a/z"), mu(t, first, "/b/a"))
	if err != nil {
		t.Fatal(err)
	}
	underA := open(t, ens.Servers(), connection.WithNamespace(root+"/a"))
	underB := open(t, ens.Servers(), connection.WithNamespace(root+"/b"))
	m2, err := multilock.New(mu(t, underA, "/z"), mu(t, underB, "/a"))
	if err != nil {
		t.Fatal(err)
	}

	// Each holds both, alone, then lets go; a Lock that waits for longer
	// than this bound waits for the other participant, which waits for it.
	bounded, cancelBounded := context.WithTimeout(ctx, 10*time.Second)
	defer cancelBounded()
	var (
		inside  sync.Mutex
		holders int
		overlap bool
		wg      sync.WaitGroup
	)
	errs := make(chan error, 2)
	for i, m := range []*multilock.Multi{m1, m2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Lock(bounded); err != nil {
				errs <- fmt.Errorf("participant %d: %w", i+1, err)
				return
			}
			inside.Lock()
			holders++
			overlap = overlap || holders > 1
			inside.Unlock()
			inside.Lock()
			holders--
			inside.Unlock()
			if err := m.Unlock(ctx); err != nil {
				errs <- fmt.Errorf("participant %d: unlock: %w", i+1, err)
			}
		}()
	}
	// Both queue behind the holders (in client-path order, one behind X
	// and one behind Y; in server-path order, both behind X) before the
	// holders let go, so the outcome does not depend on timing.
	waitContenders(t, plain, 4, x, y)
	for _, h := range []*mutex.Mutex{holdX, holdY} {
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("deadlock: %v", err)
			continue
		}
		t.Error(err)
	}
	if overlap {
		t.Error("both participants held at once")
	}
}

// TestNewComparesServerPaths: one znode named through two namespaces is a
// duplicate (a Multi would wait for itself), and locks are taken in the
// order of their server paths, whatever paths their clients see.
func TestNewComparesServerPaths(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	underRoot := open(t, ens.Servers(), connection.WithNamespace(root))
	underA := open(t, ens.Servers(), connection.WithNamespace(root+"/a"))
	underB := open(t, ens.Servers(), connection.WithNamespace(root+"/b"))

	if _, err := multilock.New(mu(t, underRoot, "/a/z"), mu(t, underA, "/z")); !errors.Is(err, multilock.ErrDuplicate) {
		t.Fatalf("%s/a/z named through two namespaces: %v, want ErrDuplicate", root, err)
	}

	y, x := mu(t, underB, "/a"), mu(t, underA, "/z") // <root>/b/a, <root>/a/z
	m, err := multilock.New(y, x)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Locks(); got[0] != multilock.Lock(x) || got[1] != multilock.Lock(y) {
		t.Fatalf("order %s, %s; want %s/a/z (client path /z) before %s/b/a (client path /a)",
			got[0].Path(), got[1].Path(), root, root)
	}
}
