package connection_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCreateAndListingWaitWithoutAGoroutine: a protected create whose
// context can end, and the listing its then sends behind it
// (CreateProtectedThen, ChildrenThen, as a lock's waiter makes them), wait
// for their answers without a goroutine of their own: with the link
// silent, n callers in flight add n goroutines, not 2n or 3n. When their
// context ends each caller returns its error, each listing's then is
// called once, and once the link is back nothing of theirs is left on the
// server.
func TestCreateAndListingWaitWithoutAGoroutine(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	if err := c.EnsurePath(ctx, root+"/locks"); err != nil {
		t.Fatal(err)
	}
	const n = 50
	before := runtime.NumGoroutine()
	p.Blackhole()
	cctx, cancel := context.WithCancel(ctx)
	var written, listed atomic.Int32
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := connx.Of(c).CreateProtectedThen(cctx, root+"/locks/lock-", nil, connection.EphemeralSequential, func() {
				written.Add(1)
				connx.Of(c).ChildrenThen(cctx, root+"/locks", func([]string, *zk.Stat, error) { listed.Add(1) })
			})
			errs <- err
		}()
	}
	zktest.Eventually(t, 10*time.Second, "every create written", func() error {
		if w := written.Load(); w != n {
			return errors.New("not yet")
		}
		return nil
	})
	if extra := runtime.NumGoroutine() - before; extra > n+5 {
		t.Errorf("%d creates and their listings in flight: %d goroutines more, want the %d callers' (and a writer)", n, extra, n)
	}
	cancel()
	for range n {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("create given up: %v, want context.Canceled", err)
		}
	}
	p.Restore()
	zktest.Eventually(t, 30*time.Second, "every listing answered, no node left", func() error {
		if l := listed.Load(); l != n {
			return errors.New("listings answered: not yet all")
		}
		names, _, err := c.Children(ctx, root+"/locks")
		if err != nil {
			return err
		}
		if len(names) != 0 {
			return errors.New("nodes of abandoned creates left: " + names[0])
		}
		return nil
	})
	if l := listed.Load(); l != n {
		t.Errorf("listings' then called %d times for %d listings", l, n)
	}
}
