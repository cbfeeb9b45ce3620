package cache_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCloseNotHeldByStuckBulkRead: the cache's first load sends its
// reads in bulk (multiRead, 256 nodes each, sixteen at a time) on a
// connection whose server stopped reading as the first of them was sent
// (paused): they fill the socket buffers and the client's write blocks.
// The cache's Close returns at once all the same — its reads give up
// with its context — and the client's Close after it ends the stuck
// write.
func TestCloseNotHeldByStuckBulkRead(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(1)) // its own: the test pauses it
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	root := "/stuck"
	mustCreate(t, conn, root, nil)
	long := strings.Repeat("n", 230)
	var reqs []any
	for i := range 4000 {
		reqs = append(reqs, &zk.CreateRequest{Path: fmt.Sprintf("%s/%s-%05d", root, long, i), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 100 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	conn.Close()

	sn := &testkit.StallNet{}
	sn.StopServerOn(func(b []byte) bool { return testkit.Opcode(b) == 22 }, func() error { return ens.Pause(0) })
	client := open(t, ens.Servers(), connection.WithDialer(sn.Dial), connection.WithSessionTimeout(20*time.Second))
	t.Cleanup(func() { ens.Resume(0) }) // first: the cleanups before it talk to the server
	c := newCache(t, client, root)
	select {
	case <-sn.Stopped():
		if err := sn.Err(); err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no read in bulk within a minute")
	}
	zktest.Eventually(t, 30*time.Second, "the client's write blocked", func() error {
		if d := sn.Blocked(); d < 500*time.Millisecond {
			return fmt.Errorf("the longest write in progress lasted %v", d)
		}
		return nil
	})

	start := time.Now()
	c.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the cache's Close took %v while the client's write was blocked", took)
	} else {
		t.Logf("the cache's Close took %v", took)
	}
	start = time.Now()
	client.Close()
	took := time.Since(start)
	if d := sn.Blocked(); d > 0 {
		t.Fatalf("the client's Close returned after %v while its write had been blocked for %v", took, d)
	}
	t.Logf("the client's Close took %v", took)
}

// TestCloseDuringLoadAndReconnect: Close while the first load of 2,000
// nodes is in flight, and Close while the client reconnects, return
// promptly; the listeners' channels close; nothing is left running
// (goleak in TestMain); a Sync or Trust waiting at Close fails with
// ErrClosed (unless it was done before).
func TestCloseDuringLoadAndReconnect(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	var reqs []any
	for i := range 2000 {
		reqs = append(reqs, &zk.CreateRequest{Path: fmt.Sprintf("%s/n%d", root, i), Data: []byte("d"), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 200 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	closeWithin := func(c *cache.Cache, ch <-chan cache.Event, waiters ...func() error) {
		t.Helper()
		errs := make(chan error, len(waiters))
		for _, w := range waiters {
			go func() { errs <- w() }()
		}
		time.Sleep(20 * time.Millisecond) // let them wait
		at := time.Now()
		c.Close()
		if d := time.Since(at); d > 5*time.Second {
			t.Errorf("Close took %v", d)
		}
		for range ch {
		}
		for range waiters {
			select {
			case err := <-errs:
				if err != nil && !errors.Is(err, cache.ErrClosed) {
					t.Errorf("a waiter at Close: %v, want nil (done before it) or ErrClosed", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a waiter still waiting 5 s after Close")
			}
		}
		c.Close() // idempotent
	}
	ctx := context.Background()
	for range 3 {
		c, err := cache.New(client, root)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := c.Listen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the load is under way
		closeWithin(c, ch, func() error { return c.Sync(ctx) }, func() error { _, err := c.Trust(ctx); return err })
	}
	c, err := cache.New(client, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trust(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	for i := range 50 {
		if _, err := conn.Set(fmt.Sprintf("%s/n%d", root, i*7), []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
	}
	proxy.Restore()
	time.Sleep(1100 * time.Millisecond) // go-zookeeper reconnects after a second
	closeWithin(c, ch, func() error { return c.Sync(ctx) }, func() error {
		for {
			// Trust until Close: it may return a trust period first.
			done, err := c.Trust(ctx)
			if err != nil {
				return err
			}
			<-done
		}
	})
	if _, err := c.Listen(ctx); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("Listen after Close: %v", err)
	}
}
