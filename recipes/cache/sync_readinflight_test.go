package cache_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// TestSyncWaitsForChangeNotifiedToReadInFlight: a listing is answered
// before a child is made, and the child's creation is notified to the
// watch that listing set; the sync Sync sends is answered after both, and
// its answer reaches the worker before the listing's (reads and syncs
// hand their answers over from goroutines of their own, in any order).
// The notification was not the worker's to drain when the sync's answer
// came: the listing's watch is hooked only when its answer is applied.
// Sync must still wait for the read that sees the child: the child was
// made before Sync was called. In both watch modes.
func TestSyncWaitsForChangeNotifiedToReadInFlight(t *testing.T) {
	inWatchModes(t, func(t *testing.T, opts ...cache.Option) {
		ens := shared.Ensemble(t)
		root := ens.Root(t)
		conn := ens.Conn(t)
		dir, kid := root+"/d", root+"/d/kid"
		mustCreate(t, conn, dir, nil)

		abort := make(chan struct{})
		wait := waitOrAbort(abort)
		answered, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var lists atomic.Int32
		readHook := func(path string, listing bool, read, send func()) {
			if path != dir || !listing {
				read()
				send()
				return
			}
			switch lists.Add(1) {
			case 1:
				read() // before the child is made
				close(answered)
				wait(release) // handed over after the sync's answer
				send()
			case 2:
				// The listing that shows the child: held until Sync
				// returns, or a while, so that a Sync that does not
				// wait for it returns without the child.
				select {
				case <-returned:
				case <-abort:
				case <-time.After(2 * time.Second):
				}
				read()
				send()
			default:
				read()
				send()
			}
		}
		var called atomic.Bool
		var ownSync atomic.Int32
		syncHook := func(sync, send func()) {
			mine := called.Load() && ownSync.Add(1) == 1
			sync()
			send()
			if mine {
				close(release)
			}
		}
		opts = append(opts, cache.WithReadHook(readHook), cache.WithSyncHook(syncHook))
		c := newCache(t, open(t, ens.Servers()), dir, opts...)
		t.Cleanup(func() { close(abort) }) // before the cache closes
		wait(answered)
		mustCreate(t, conn, kid, []byte("v1"))

		called.Store(true)
		err := c.Sync(ctxFor(t, time.Minute))
		_, inView := c.Get(kid)
		close(returned)
		if err != nil {
			t.Fatal(err)
		}
		if ownSync.Load() == 0 {
			t.Fatal("Sync returned without sending a sync")
		}
		if !inView {
			t.Fatalf("%s not in the view when Sync returned; it was made before Sync was called (view: %v)", kid, nodesOf(c.Snapshot()))
		}
		if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, dir, -1)); d != "" {
			t.Fatalf("the view after Sync differs from the server:\n%s", d)
		}
	})
}
