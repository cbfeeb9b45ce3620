package connection_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
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
	if _, err := c.Set(connection.Pin(ctx, old), root+"/data", []byte("v2"), -1); err != nil {
		t.Fatalf("pinned set in its own session: %v", err)
	}
	states := c.Listen(ctx)
	p.Blackhole()
	expect(t, states, 5*time.Second, connection.Suspended, connection.Lost)
	p.Restore()
	if _, err := c.WaitSession(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := c.Set(connection.Pin(ctx, old), root+"/data", []byte("v3"), -1)
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
