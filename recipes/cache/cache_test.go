package cache_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// TestTree: a subtree written before the cache starts is its first full
// view, node for node.
func TestTree(t *testing.T) { inWatchModes(t, testTree) }

func testTree(t *testing.T, opts ...cache.Option) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	for i := range 5 {
		p := fmt.Sprintf("%s/a%d", root, i)
		mustCreate(t, conn, p, []byte(p))
		for j := range 3 {
			mustCreate(t, conn, fmt.Sprintf("%s/b%d", p, j), []byte{byte(j)})
		}
	}
	c := newCache(t, open(t, ens.Servers()), root, opts...)
	waitInit(t, c)
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatal(d)
	}
	names, ok := c.Children(root)
	if !ok || len(names) != 5 || names[0] != "a0" {
		t.Fatalf("children of root: %v %v", names, ok)
	}
}

// TestEvents: creates, sets and deletes, a node deleted and created
// again, a subtree deleted: the events replayed onto the first Resync give
// the cache's view, which is the server's tree; each path's events are in
// version order, parents before children.
func TestEvents(t *testing.T) { inWatchModes(t, testEvents) }

func testEvents(t *testing.T, opts ...cache.Option) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := newCache(t, open(t, ens.Servers()), root, opts...)
	rec := record(t, c)
	waitInit(t, c)
	a, b := root+"/a", root+"/b"
	mustCreate(t, conn, a, []byte("1"))
	for _, v := range []string{"2", "3"} {
		if _, err := conn.Set(a, []byte(v), -1); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, conn, a+"/x", nil)
	mustCreate(t, conn, a+"/y", []byte("y"))
	if err := conn.Delete(a+"/x", -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, conn, a+"/x", []byte("again"))
	mustCreate(t, conn, b, nil)
	mustCreate(t, conn, b+"/c", nil)
	mustCreate(t, conn, b+"/c/d", []byte("deep"))
	rec.waitFor(t, "Created b/c/d", func(ev cache.Event) bool { return ev.Type == cache.Created && ev.Path == b+"/c/d" })
	for _, p := range []string{b + "/c/d", b + "/c", b} {
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxFor(t, 30*time.Second)
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := readTree(t, conn, root, -1)
	if d := diff(nodesOf(c.Snapshot()), want); d != "" {
		t.Fatalf("cache after sync:\n%s", d)
	}
	hasEveryEvent(t, rec, c, "after sync")
	evs := rec.all()
	t.Logf("events: %s", summary(evs))
	if bad := checkOrder(evs, root); len(bad) > 0 {
		t.Fatalf("order:\n%s\nevents: %s", strings.Join(bad, "\n"), summary(evs))
	}
	if evs[0].Type != cache.Resync {
		t.Fatalf("first event %v, want RESYNC", evs[0].Type)
	}
	var sawInit, sawTrusted bool
	for _, ev := range evs {
		sawInit = sawInit || ev.Type == cache.Initialized
		sawTrusted = sawTrusted || ev.Type == cache.Trusted && sawInit
	}
	if !sawInit || !sawTrusted {
		t.Fatalf("initialized %v, trusted after it %v: %s", sawInit, sawTrusted, summary(evs))
	}
	if closed(c.Untrusted()) {
		t.Fatal("view untrusted after sync")
	}
}
