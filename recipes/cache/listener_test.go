package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestSlowListener: a listener that does not read does not hold the cache
// up: the cache follows a few hundred changes and stays trusted while the
// listener's queue of 16 overflows. When the listener reads again it gets
// Overflow (how many it missed), then a Resync whose snapshot is the view,
// then the events after it; replayed, they give the view. A listener that
// keeps up, beside it, misses nothing.
func TestSlowListener(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := newCache(t, open(t, ens.Servers()), root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow, err := c.Listen(ctx, cache.WithBuffer(16))
	if err != nil {
		t.Fatal(err)
	}
	fast := record(t, c)
	waitInit(t, c)
	const n = 200
	for i := range n {
		mustCreate(t, conn, fmt.Sprintf("%s/n%d", root, i), []byte{byte(i)})
	}
	for i := range n {
		if _, err := conn.Set(fmt.Sprintf("%s/n%d", root, i), []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
	}
	sctx := ctxFor(t, 30*time.Second)
	if err := c.Sync(sctx); err != nil {
		t.Fatalf("sync with a listener not reading: %v", err)
	}
	if closed(c.Untrusted()) {
		t.Fatal("untrusted")
	}
	if got := c.Snapshot().Len(); got != n+1 {
		t.Fatalf("%d nodes in the view, want %d", got, n+1)
	}

	var evs []cache.Event
	next := func() cache.Event {
		t.Helper()
		select {
		case ev := <-slow:
			evs = append(evs, ev)
			return ev
		case <-time.After(10 * time.Second):
			t.Fatalf("no event; so far %s", summary(evs))
		}
		return cache.Event{}
	}
	// The first 16 events (the first Resync among them) were queued; then
	// the queue overflowed.
	var ev cache.Event
	for ev = next(); ev.Type != cache.Overflow; ev = next() {
		if len(evs) > 16 {
			t.Fatalf("more than the buffer before Overflow: %s", summary(evs))
		}
	}
	if ev.Missed < 2*n-16 {
		t.Fatalf("Overflow says %d missed, want at least %d", ev.Missed, 2*n-16)
	}
	ev = next()
	if ev.Type != cache.Resync || ev.Snapshot.Len() != n+1 {
		t.Fatalf("after Overflow: %v with %d nodes", ev.Type, ev.Snapshot.Len())
	}
	// Changes after the Resync come as events again.
	if _, err := conn.Set(root+"/n0", []byte("after"), -1); err != nil {
		t.Fatal(err)
	}
	for ev = next(); ev.Type != cache.Changed; ev = next() {
	}
	if ev.Path != root+"/n0" || string(ev.Node.Data) != "after" {
		t.Fatalf("event after the Resync: %v %s %q", ev.Type, ev.Path, ev.Node.Data)
	}
	if d := diffReplay(replay(evs), c.Snapshot()); d != "" {
		t.Fatalf("slow listener's replay:\n%s", d)
	}
	hasEveryEvent(t, fast, c, "the fast listener")
	for _, ev := range fast.all() {
		if ev.Type == cache.Overflow {
			t.Fatal("the fast listener overflowed")
		}
	}
}

// TestListenersComeAndGo: while a writer changes the tree and the client
// is cut off and reconnects, listeners start and stop all the time; each
// one's events, replayed onto its Resync, give the view at the end (for
// those still listening) — no event lost or doubled at a Listen.
func TestListenersComeAndGo(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	w := newWriterTree(t, ens, 100, 10*time.Millisecond, 8*time.Second)
	root, conn, wr, proxy, client := w.root, w.conn, w.wr, w.proxy, w.client
	c := newCache(t, client, root)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	wr.start()
	defer wr.finish(t)
	var mu sync.Mutex
	var keep []*recorder
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i == 3*g {
					r := record(t, c, cache.WithBuffer(8+g*100))
					mu.Lock()
					keep = append(keep, r)
					mu.Unlock()
					continue
				}
				lctx, cancel := context.WithCancel(context.Background())
				ch, err := c.Listen(lctx)
				if err != nil {
					cancel()
					t.Error(err)
					return
				}
				for range g {
					<-ch
				}
				cancel()
				for range ch {
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	proxy.Cut()
	time.Sleep(500 * time.Millisecond)
	proxy.Restore()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	wr.pause()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatalf("the view differs from the server:\n%s", d)
	}
	snap := c.Snapshot()
	for i, r := range keep {
		zktest.Eventually(t, 10*time.Second, fmt.Sprintf("listener %d replays to the view", i), func() error {
			if d := diffReplay(replay(r.all()), snap); d != "" {
				return errors.New(d)
			}
			return nil
		})
	}
	t.Logf("%d listeners kept, %d nodes", len(keep), snap.Len())
	wr.resume()
}
