package connection_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// TestChildrenWatchIsShared: callers that watch one node's children while
// a watch is pending share it, so abandoned waits add none; it fires for a
// child created, and the next call sets a new one.
func TestChildrenWatchIsShared(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Create(ctx, root+"/dir", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	var first *connection.Watch
	for i := range 5 {
		children, _, w, err := c.ChildrenWatch(ctx, root+"/dir")
		if err != nil || len(children) != 0 {
			t.Fatalf("ChildrenWatch = %v, %v", children, err)
		}
		if i == 0 {
			first = w
		} else if w != first {
			t.Fatalf("call %d got a new watch while one was pending", i)
		}
	}
	if n := c.Stats().PendingWatches; n != 1 {
		t.Fatalf("PendingWatches = %d, want 1", n)
	}
	// A data watch on the same node is another watch.
	if _, _, w, err := c.GetWatch(ctx, root+"/dir"); err != nil || w == first {
		t.Fatalf("GetWatch = %v, %v: want a watch of its own", w, err)
	}
	if _, err := c.Create(ctx, root+"/dir/a", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the child watch did not fire")
	}
	if ev := first.Event(); ev.Type != zk.EventNodeChildrenChanged || first.Err() != nil {
		t.Fatalf("event %v, err %v", ev, first.Err())
	}
	children, _, w, err := c.ChildrenWatch(ctx, root+"/dir")
	if err != nil || len(children) != 1 || w == first {
		t.Fatalf("after the change: %v, %v, new watch %v", children, err, w != first)
	}
}

// TestPinnedWriteFailsInAnotherSession: a write pinned to a session that
// is gone fails with ErrSessionLost and is not sent in the next session;
// the same write unpinned runs there.
func TestPinnedWriteFailsInAnotherSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/data", []byte("v1"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	old := c.Session()
	if _, err := c.Set(connx.Pin(ctx, old), root+"/data", []byte("v2"), -1); err != nil {
		t.Fatalf("pinned set in its own session: %v", err)
	}
	states := c.Listen(ctx)
	p.Blackhole()
	expect(t, states, 5*time.Second, connection.Suspended, connection.Lost)
	p.Restore()
	if _, err := c.WaitSession(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := c.Set(connx.Pin(ctx, old), root+"/data", []byte("v3"), -1)
	if !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("pinned set after its session = %v, want ErrSessionLost", err)
	}
	observer := ens.Conn(t)
	if data, _, err := observer.Get(root + "/data"); err != nil || string(data) != "v2" {
		t.Fatalf("data %q, %v: the pinned set ran in the next session", data, err)
	}
	if _, err := c.Set(ctx, root+"/data", []byte("v4"), -1); err != nil {
		t.Fatalf("unpinned set in the next session: %v", err)
	}
}

// TestWatchesCostNoGoroutine: pending watches on many nodes start no
// goroutine; each fires once for its node's deletion, and then none is
// left pending.
func TestWatchesCostNoGoroutine(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	const n = 200
	for i := range n {
		if _, err := c.Create(ctx, fmt.Sprintf("%s/n%d", root, i), nil, connection.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	before := runtime.NumGoroutine()
	var ws []*connection.Watch
	for i := range n {
		_, _, w, err := c.GetWatch(ctx, fmt.Sprintf("%s/n%d", root, i))
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Fatalf("%d goroutines for %d pending watches, %d before", after, n, before)
	}
	if got := c.Stats().PendingWatches; got != n {
		t.Fatalf("PendingWatches = %d, want %d", got, n)
	}
	other := ens.Conn(t)
	for i := range n {
		if err := other.Delete(fmt.Sprintf("%s/n%d", root, i), -1); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range ws {
		select {
		case <-w.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("watch %d did not fire", i)
		}
		if ev := w.Event(); ev.Type != zk.EventNodeDeleted || w.Err() != nil {
			t.Fatalf("watch %d: %v, %v", i, ev, w.Err())
		}
	}
	if got := c.Stats().PendingWatches; got != 0 {
		t.Fatalf("PendingWatches = %d after every node changed", got)
	}
}

// TestWatchSetJustBeforeAChangeFires: another client deletes the node
// while the read that sets the watch is on its way, over and over; a
// watch that GetWatch returned must fire. The event can reach the client
// before GetWatch returns to its caller, the window a watch without a
// goroutine of its own must not lose.
func TestWatchSetJustBeforeAChangeFires(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers()[:1])
	other := ens.Conn(t)
	ctx := ctxFor(t, 2*time.Minute)
	set := 0
	for i := range 300 {
		p := fmt.Sprintf("%s/n%d", root, i)
		if _, err := c.Create(ctx, p, nil, connection.Persistent); err != nil {
			t.Fatal(err)
		}
		deleted := make(chan error, 1)
		go func() {
			time.Sleep(time.Duration(i%7) * 100 * time.Microsecond)
			deleted <- other.Delete(p, -1)
		}()
		_, _, w, err := c.GetWatch(ctx, p)
		if err := <-deleted; err != nil {
			t.Fatal(err)
		}
		if errors.Is(err, zk.ErrNoNode) {
			continue // deleted before the read
		}
		if err != nil {
			t.Fatal(err)
		}
		set++
		select {
		case <-w.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the watch never fired for the deletion", i)
		}
	}
	t.Logf("%d of 300 watches set before the deletion", set)
}

// TestCloseEndsWatches: Close fires every pending watch, which then says
// its session ended.
func TestCloseEndsWatches(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c, err := connection.Open(ctxFor(t, 10*time.Second), ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 10*time.Second)
	if _, err := c.Create(ctx, root+"/n", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := c.GetWatch(ctx, root+"/n")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !closed(w.Done()) {
		t.Fatal("a pending watch is still open after Close")
	}
	if !errors.Is(w.Err(), connection.ErrSessionLost) {
		t.Fatalf("Err = %v, want ErrSessionLost", w.Err())
	}
}
