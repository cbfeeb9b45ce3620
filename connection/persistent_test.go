package connection_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// eventLog collects what a persistent watch's subscriber is told.
type eventLog struct {
	mu  sync.Mutex
	evs []string
}

func (l *eventLog) add(ev zk.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, fmt.Sprintf("%v %s", ev.Type, ev.Path))
}

func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.evs
	l.evs = nil
	return out
}

// waitEvents waits until l holds want, in order, and nothing else.
func waitEvents(t *testing.T, l *eventLog, want ...string) {
	t.Helper()
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(got) < len(want) {
		got = append(got, l.take()...)
		time.Sleep(10 * time.Millisecond)
	}
	// A short wait more for an event that should not be there.
	time.Sleep(100 * time.Millisecond)
	got = append(got, l.take()...)
	if !slices.Equal(got, want) {
		t.Fatalf("events\n  %q\nwant\n  %q", got, want)
	}
}

// TestPersistentAndRecursiveWatchesOnTheServer: an addWatch sets a watch
// that stays after it fires — a persistent one reports its node's
// creation, data changes, children's changes and deletion, a recursive
// one the creation, data changes and deletion of its node and every node
// below, never a change of children — and the server holds it for the
// session until its last subscriber is removed, which takes it off.
func TestPersistentAndRecursiveWatchesOnTheServer(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	px := connx.Of(c)
	node, tree := root+"/node", root+"/tree"
	if _, err := conn.Create(tree, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var nodeLog, treeLog eventLog
	subNode, err := px.AddPersistentSink(node, false, nodeLog.add)
	if err != nil {
		t.Fatal(err)
	}
	subTree, err := px.AddPersistentSink(tree, true, treeLog.add)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := px.AddWatch(ctx, node, false)
	if err != nil {
		t.Fatal(err)
	}
	if sess != c.Session() {
		t.Fatalf("AddWatch's session %#x, want the current one", sess.ID())
	}
	if _, err := px.AddWatch(ctx, tree, true); err != nil {
		t.Fatal(err)
	}
	if n := testkit.ServerWatches(t, ens, sess.ID()); n != 2 {
		t.Fatalf("server holds %d watches of the session, want 2", n)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // twice: the watches stay after they fire
		must(conn.Create(node, nil, 0, zk.WorldACL(zk.PermAll)))
		must(conn.Set(node, []byte("x"), -1))
		must(conn.Create(node+"/child", nil, 0, zk.WorldACL(zk.PermAll)))
		must(conn.Create(node+"/child/grandchild", nil, 0, zk.WorldACL(zk.PermAll)))
		must(nil, conn.Delete(node+"/child/grandchild", -1))
		must(nil, conn.Delete(node+"/child", -1))
		must(nil, conn.Delete(node, -1))
		waitEvents(t, &nodeLog,
			"EventNodeCreated "+node, "EventNodeDataChanged "+node,
			"EventNodeChildrenChanged "+node, "EventNodeChildrenChanged "+node,
			"EventNodeDeleted "+node)

		must(conn.Set(tree, []byte("x"), -1))
		must(conn.Create(tree+"/a", nil, 0, zk.WorldACL(zk.PermAll)))
		must(conn.Create(tree+"/a/b", nil, 0, zk.WorldACL(zk.PermAll)))
		must(conn.Set(tree+"/a/b", []byte("y"), -1))
		must(nil, conn.Delete(tree+"/a/b", -1))
		must(nil, conn.Delete(tree+"/a", -1))
		waitEvents(t, &treeLog,
			"EventNodeDataChanged "+tree, "EventNodeCreated "+tree+"/a",
			"EventNodeCreated "+tree+"/a/b", "EventNodeDataChanged "+tree+"/a/b",
			"EventNodeDeleted "+tree+"/a/b", "EventNodeDeleted "+tree+"/a")
	}

	if err := px.RemovePersistent(ctx, subNode); err != nil {
		t.Fatal(err)
	}
	if err := px.RemovePersistent(ctx, subTree); err != nil {
		t.Fatal(err)
	}
	if n := testkit.ServerWatches(t, ens, sess.ID()); n != 0 {
		t.Fatalf("server holds %d watches of the session after the removals, want none", n)
	}
	must(conn.Create(node, nil, 0, zk.WorldACL(zk.PermAll)))
	must(conn.Set(tree, []byte("z"), -1))
	waitEvents(t, &nodeLog)
	waitEvents(t, &treeLog)
}

// TestPersistentWatchSharedBySubscribers: the subscribers of one path
// share the server's one watch, which stays until the last of them is
// removed; the other mode on the same path is refused, and a bad path
// too.
func TestPersistentWatchSharedBySubscribers(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	px := connx.Of(c)
	var a, b eventLog
	subA, err := px.AddPersistentSink(root, true, a.add)
	if err != nil {
		t.Fatal(err)
	}
	subB, err := px.AddPersistentSink(root, true, b.add)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := px.AddWatch(ctx, root, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := px.AddPersistentSink(root, false, a.add); !errors.Is(err, connx.ErrWatchModeConflict) {
		t.Errorf("persistent watch of a path watched recursively: %v, want ErrWatchModeConflict", err)
	}
	if _, err := px.AddPersistentSink("bad/", false, a.add); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("AddPersistentSink of a bad path: %v, want ErrInvalidPath", err)
	}
	if _, err := px.AddWatch(ctx, "bad/", false); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("AddWatch of a bad path: %v, want ErrInvalidPath", err)
	}
	id := c.Session().ID()
	if n := testkit.ServerWatches(t, ens, id); n != 1 {
		t.Fatalf("server holds %d watches of the session, want 1", n)
	}
	if err := px.RemovePersistent(ctx, subA); err != nil {
		t.Fatal(err)
	}
	if n := testkit.ServerWatches(t, ens, id); n != 1 {
		t.Fatalf("server holds %d watches of the session with one subscriber left, want 1", n)
	}
	if _, err := conn.Create(root+"/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, &b, "EventNodeCreated "+root+"/x")
	waitEvents(t, &a)
	if err := px.RemovePersistent(ctx, subB); err != nil {
		t.Fatal(err)
	}
	if n := testkit.ServerWatches(t, ens, id); n != 0 {
		t.Fatalf("server holds %d watches of the session after the last removal, want none", n)
	}
}
