package cache

import (
	"maps"
	"slices"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// tree makes entries for the paths under root (parents before children).
func tree(root string, paths ...string) *entry {
	r := &entry{name: root}
	for _, p := range paths {
		dir, name := split(p)
		parent := lookupIn(r, dir)
		k := &entry{name: name, parent: parent}
		kids := append(parent.children(), k)
		parent.setChildren(kids)
	}
	return r
}

func pending(t *watchTable) map[string]uint8 {
	got := map[string]uint8{}
	t.RangeWatches(func(p string, k uint8) { got[p] |= k })
	return got
}

// TestWatchTable: the entries as a sink's watch table — a node and kind
// counted once, a node the cache does not hold kept by path, a removed
// entry's watches kept until they fire or an entry at the path takes them.
func TestWatchTable(t *testing.T) {
	const d, c = connx.WatchData, connx.WatchChild
	root := tree("/r", "/r/a", "/r/b", "/r/a/c")
	tb := &watchTable{root: root}
	var _ connx.WatchTable = tb

	tb.MarkWatches("/r/a", d)
	tb.MarkWatches("/r/a", d|c)
	tb.MarkWatches("/r", c)
	tb.MarkWatches("/r/x", d) // not held
	if n := tb.CountWatches(); n != 4 {
		t.Fatalf("count %d, want 4", n)
	}
	if got, want := pending(tb), map[string]uint8{"/r": c, "/r/a": d | c, "/r/x": d}; !maps.Equal(got, want) {
		t.Fatalf("pending %v, want %v", got, want)
	}
	if got := tb.TakeWatches("/r/a", c); got != c {
		t.Fatalf("take child of /r/a: %d", got)
	}
	if got := tb.TakeWatches("/r/a", c); got != 0 {
		t.Fatalf("take child of /r/a again: %d", got)
	}
	if got := tb.TakeWatches("/r/x", d|c); got != d {
		t.Fatalf("take /r/x: %d", got)
	}
	if n := tb.CountWatches(); n != 2 {
		t.Fatalf("count %d, want 2", n)
	}

	// /r/a removed with its data watch pending: kept by path.
	a := lookupIn(root, "/r/a")
	tb.MarkWatches("/r/a/c", c)
	tb.mu.Lock()
	a.removed = true
	tb.orphan(a)
	tb.orphan(a.children()[0])
	tb.mu.Unlock()
	root.setChildren([]*entry{lookupIn(root, "/r/b")})
	if got, want := pending(tb), map[string]uint8{"/r": c, "/r/a": d, "/r/a/c": c}; !maps.Equal(got, want) {
		t.Fatalf("pending after removal %v, want %v", got, want)
	}
	// A new entry at /r/a takes them; a kind pending in both counts once.
	a2 := &entry{name: "a", parent: root}
	root.setChildren([]*entry{a2, lookupIn(root, "/r/b")})
	tb.MarkWatches("/r/a", d|c)
	if a2.watched != d|c || tb.orphans["/r/a"] != 0 {
		t.Fatalf("new entry %d, orphan %d", a2.watched, tb.orphans["/r/a"])
	}
	if n := tb.CountWatches(); n != 4 {
		t.Fatalf("count %d, want 4", n)
	}
	if got := tb.TakeWatches("/r/a/c", d|c); got != c {
		t.Fatalf("take the orphan /r/a/c: %d", got)
	}
	if tb.orphans != nil {
		t.Fatalf("orphans left: %v", tb.orphans)
	}
	tb.ClearWatches()
	if n := tb.CountWatches(); n != 0 || len(pending(tb)) != 0 {
		t.Fatalf("after clear: count %d, pending %v", n, pending(tb))
	}
}

// TestSnapshotWalk: a snapshot finds nodes by their names, breadth first,
// and gives their paths sorted as strings.
func TestSnapshotWalk(t *testing.T) {
	for _, root := range []string{"/", "/r"} {
		s := &snapshot{root: root, nodes: []snapNode{
			{name: root, kids: 1, end: 3},
			{name: "a", kids: 3, end: 4},
			{name: "a-b"},
			{name: "c"},
		}}
		snap := Snapshot{s}
		p := func(rel string) string { return join(root, rel) }
		for _, tc := range []struct {
			path string
			ok   bool
		}{
			{root, true}, {p("a"), true}, {p("a-b"), true}, {p("a/c"), true},
			{p("b"), false}, {p("a/c/d"), false}, {p("a/"), false}, {root + "x", false}, {"/", root == "/"},
		} {
			n, ok := snap.Get(tc.path)
			if ok != tc.ok || ok && n.Path != tc.path {
				t.Errorf("root %s: Get(%q) = %q, %v; want %v", root, tc.path, n.Path, ok, tc.ok)
			}
		}
		if kids, ok := snap.Children(root); !ok || len(kids) != 2 || kids[0] != "a" || kids[1] != "a-b" {
			t.Errorf("root %s: children %v %v", root, kids, ok)
		}
		want := []string{root, p("a"), p("a-b"), p("a/c")}
		if root == "/" {
			want = []string{"/", "/a", "/a-b", "/a/c"}
		}
		if got := snap.Paths(); !slices.Equal(got, want) {
			t.Errorf("root %s: paths %v, want %v", root, got, want)
		}
	}
}
