package connection_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// TestPendingWatchesCountsANodeOnce: PendingWatches promises at most one
// per watched node and kind per session. A node with a sink's data and
// child watches, and then a GetWatch and a ChildrenWatch of another user
// of the client (the server holds one watch of each kind), counts two.
//
// Stats adds len(c.watches) (the Watches) and c.ownPending (the sink
// entries' kinds), so it must not count a key that is in both (4 here).
// Only the figure is at stake: the watches fire and are told either way.
//
// It runs with a sink of each kind (the client's table, a WatchTable), and
// then with one of each on the node.
func TestPendingWatchesCountsANodeOnce(t *testing.T) {
	t.Parallel()
	forEachSinkKind(t, testPendingWatchesCountsANodeOnce)
}

func testPendingWatchesCountsANodeOnce(t *testing.T, kind int) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	s := sinkKinds[kind].new(c, func(string, zk.Event) {})
	defer s.Close()
	if _, err := s.ReadWatchMany(ctx, []connx.BulkRead{{Path: root, Children: true}}); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().PendingWatches; n != 2 {
		t.Fatalf("after the sink's read: PendingWatches = %d, want 2", n)
	}
	if _, _, _, err := c.GetWatch(ctx, root); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ChildrenWatch(ctx, root); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().PendingWatches; n != 2 {
		t.Fatalf("after a GetWatch and a ChildrenWatch of the same node: PendingWatches = %d, want 2", n)
	}
	s2 := sinkKinds[1-kind].new(c, func(string, zk.Event) {})
	defer s2.Close()
	if _, err := s2.ReadWatchMany(ctx, []connx.BulkRead{{Path: root, Children: true}}); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().PendingWatches; n != 2 {
		t.Fatalf("after a sink of the other kind read it too: PendingWatches = %d, want 2", n)
	}
	s.Close()
	if n := c.Stats().PendingWatches; n != 2 {
		t.Fatalf("after the first sink closed: PendingWatches = %d, want 2", n)
	}
}
