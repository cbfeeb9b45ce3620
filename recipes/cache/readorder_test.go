package cache_test

// The reads the worker makes alone run on goroutines of their own: their
// results reach it in any order, not the order the server answered them.
// These tests hold results back (cache.WithReadHook) to apply a newer
// read before an older one.

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// TestDataOlderThanListing: a new node's data read is answered, the node
// is deleted and made again with its child (one multi, so both have the
// same new czxid), its listing is answered then, and the listing and the
// child's read reach the worker before the old data read does. The old
// data must not publish the new node's children under the old node: that
// would make them Created under it, Deleted with it when the new node was
// read, and Created again with the same czxid ("Created …/c with czxid N
// after N"), an order a churning tree makes only rarely.
func TestDataOlderThanListing(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	n, kid := root+"/n", root+"/n/c"
	mustCreate(t, conn, n, []byte("old"))
	mustCreate(t, conn, kid, []byte("old"))
	abort := make(chan struct{})
	wait := waitOrAbort(abort)
	dataAnswered, remade, kidRead, release := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var nData, nList, kidData atomic.Int32
	hook := func(path string, listing bool, read, send func()) {
		switch {
		case path == n && !listing && nData.Add(1) == 1:
			read() // the old node
			close(dataAnswered)
			wait(release) // applied last
			send()
		case path == n && listing && nList.Add(1) == 1:
			wait(remade) // answered after the remake
			read()
			send()
		case path == kid && !listing && kidData.Add(1) == 1:
			close(kidRead) // the new listing was applied: it made the child's entry
			read()
			send()
		default:
			read()
			send()
		}
	}
	c := newCache(t, open(t, ens.Servers()), root, cache.WithMaxDepth(2), cache.WithReadHook(hook))
	t.Cleanup(func() { close(abort) }) // before the cache closes
	rec := record(t, c)
	wait(dataAnswered)
	st := remakeWithChild(t, conn, n, kid)
	close(remade)
	wait(kidRead)
	if !closed(kidRead) {
		t.Fatal("the child of the new node was never read")
	}
	close(release)
	waitInit(t, c)
	if err := c.Sync(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	viewOfNewNode(t, c, rec, conn, root, st)
}

// TestListingOfNewNodeKeepsNoOldChild: a new node is listed and its
// child read; the node is deleted and made again with a child of the same
// name (one multi); the new node's listing is applied before the node's
// data read (held back before it is sent) and before the child is read
// again. The listing names the same child, but it is another node: kept,
// its read of the old node was published under the new one (Created with
// the old czxid, then Deleted and Created again when read anew).
func TestListingOfNewNodeKeepsNoOldChild(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	n, kid := root+"/n", root+"/n/c"
	mustCreate(t, conn, n, []byte("old"))
	mustCreate(t, conn, kid, []byte("old"))
	abort := make(chan struct{})
	wait := waitOrAbort(abort)
	kidOld, relisted, nCreated := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var nData, nList, kidData atomic.Int32
	hook := func(path string, listing bool, read, send func()) {
		switch {
		case path == n && !listing && nData.Add(1) == 1:
			wait(relisted) // sent after the new node's listing was applied
			read()
			send()
		case path == n && listing && nList.Add(1) == 2:
			read() // the new node's
			send()
			close(relisted)
		case path == kid && !listing:
			switch kidData.Add(1) {
			case 1:
				read() // the old child
				send()
				close(kidOld)
			default:
				wait(nCreated) // read again only once the node is published
				read()
				send()
			}
		default:
			read()
			send()
		}
	}
	c := newCache(t, open(t, ens.Servers()), root, cache.WithMaxDepth(2), cache.WithReadHook(hook))
	t.Cleanup(func() { close(abort) }) // before the cache closes
	rec := record(t, c)
	wait(kidOld)
	st := remakeWithChild(t, conn, n, kid)
	rec.waitFor(t, "Created "+n, func(ev cache.Event) bool { return ev.Type == cache.Created && ev.Path == n })
	close(nCreated)
	waitInit(t, c)
	if err := c.Sync(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !closed(relisted) {
		t.Fatal("the new node was never listed before its data read")
	}
	viewOfNewNode(t, c, rec, conn, root, st)
}

// waitOrAbort returns a wait for a channel that gives up when abort is
// closed or after 30 s: a read hook held back this way never outlives
// the test.
func waitOrAbort(abort <-chan struct{}) func(<-chan struct{}) {
	return func(ch <-chan struct{}) {
		select {
		case <-ch:
		case <-abort:
		case <-time.After(30 * time.Second):
		}
	}
}

// remakeWithChild deletes n and its child kid and makes both again in
// one multi (so both have the same new czxid); it returns the new n's
// Stat.
func remakeWithChild(t *testing.T, conn *zk.Conn, n, kid string) *zk.Stat {
	t.Helper()
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Multi(
		&zk.DeleteRequest{Path: kid, Version: -1},
		&zk.DeleteRequest{Path: n, Version: -1},
		&zk.CreateRequest{Path: n, Data: []byte("new"), Acl: acl},
		&zk.CreateRequest{Path: kid, Data: []byte("new"), Acl: acl},
	); err != nil {
		t.Fatal(err)
	}
	_, st, err := conn.Get(n)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// viewOfNewNode checks that c, of root to depth 2, equals the server's
// tree, that rec's events are in the server's order, and that none of
// them deleted a node or created one under root other than by the remake
// whose Stat is st: the old node's reads published nothing.
func viewOfNewNode(t *testing.T, c *cache.Cache, rec *recorder, conn *zk.Conn, root string, st *zk.Stat) {
	t.Helper()
	want := readTree(t, conn, root, 2)
	if d := diff(nodesOf(c.Snapshot()), want); d != "" {
		t.Fatalf("the view differs from the server:\n%s", d)
	}
	evs := rec.all()
	if bad := checkOrder(evs, root); len(bad) > 0 {
		t.Errorf("order: %v", bad)
	}
	for _, ev := range evs {
		switch {
		case ev.Type == cache.Deleted:
			t.Errorf("Deleted %s (czxid %d): nothing was deleted from a view of the new node", ev.Path, ev.Node.Stat.Czxid)
		case ev.Type == cache.Created && ev.Path != root && ev.Node.Stat.Czxid != st.Czxid:
			t.Errorf("Created %s with czxid %d, not the new node's %d", ev.Path, ev.Node.Stat.Czxid, st.Czxid)
		}
	}
	if t.Failed() {
		t.Logf("events: %s", fmt.Sprint(summary(evs)))
	}
}
