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
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// makeTree creates root/a{0..n-1}/b{0..m-1}, each with its path as data.
func makeTree(t testing.TB, conn *zk.Conn, root string, n, m int) {
	t.Helper()
	for i := range n {
		p := fmt.Sprintf("%s/a%d", root, i)
		mustCreate(t, conn, p, []byte(p))
		for j := range m {
			q := fmt.Sprintf("%s/b%d", p, j)
			mustCreate(t, conn, q, []byte(q))
		}
	}
}

// TestShapes: the node alone (depth 0), the directory (depth 1), the
// subtree with a selector; changes outside the shape make no event.
func TestShapes(t *testing.T) { inWatchModes(t, testShapes) }

func testShapes(t *testing.T, opts ...cache.Option) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	makeTree(t, conn, root, 3, 2)
	client := open(t, ens.Servers())

	sel := cache.Selector{
		Accept:  func(p string) bool { return !strings.HasSuffix(p, "/a1") },
		Descend: func(p string) bool { return !strings.HasSuffix(p, "/a2") },
	}
	cases := []struct {
		name  string
		opts  []cache.Option
		depth int
		keep  func(p string) bool
	}{
		{"node", []cache.Option{cache.WithMaxDepth(0)}, 0, nil},
		{"directory", []cache.Option{cache.WithMaxDepth(1)}, 1, nil},
		{"tree", nil, -1, nil},
		{"selector", []cache.Option{cache.WithSelector(sel)}, -1, func(p string) bool {
			return !strings.Contains(p, "/a1") && !strings.Contains(p, "/a2/")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, client, root, append(tc.opts, opts...)...)
			waitInit(t, c)
			want := readTree(t, conn, root, tc.depth)
			for p := range want {
				if tc.keep != nil && !tc.keep(p) {
					delete(want, p)
				}
			}
			if d := diff(nodesOf(c.Snapshot()), want); d != "" {
				t.Fatal(d)
			}
			kids, ok := c.Children(root)
			if !ok {
				t.Fatal("root not in view")
			}
			if tc.depth == 0 && len(kids) != 0 {
				t.Fatalf("node cache has children %v", kids)
			}
		})
	}
}

// TestNodeCacheEvents: a node cache reports its node's changes, and none
// of its children's.
func TestNodeCacheEvents(t *testing.T) { inWatchModes(t, testNodeCacheEvents) }

func testNodeCacheEvents(t *testing.T, opts ...cache.Option) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := newCache(t, open(t, ens.Servers()), root, append(opts, cache.WithMaxDepth(0))...)
	rec := record(t, c)
	waitInit(t, c)
	mustCreate(t, conn, root+"/child", nil)
	if _, err := conn.Set(root, []byte("v1"), -1); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "Changed root", func(ev cache.Event) bool { return ev.Type == cache.Changed && string(ev.Node.Data) == "v1" })
	for _, ev := range rec.all() {
		if ev.Path != "" && ev.Path != root {
			t.Fatalf("event of %s in a node cache", ev.Path)
		}
	}
	if n, _ := c.Get(root); n.Stat.Version != 1 || n.Stat.NumChildren != 0 {
		// The child fields follow a listing; a node cache lists nothing,
		// so they are those of the last data read.
		t.Logf("root stat: version %d, children %d", n.Stat.Version, n.Stat.NumChildren)
	}
}

// TestRootComesAndGoes: a cache of an absent node is initialized empty,
// follows the node when it is created, empties when it is deleted (the
// subtree children first), and follows it again.
func TestRootComesAndGoes(t *testing.T) { inWatchModes(t, testRootComesAndGoes) }

func testRootComesAndGoes(t *testing.T, opts ...cache.Option) {
	t.Parallel()
	ens := shared.Ensemble(t)
	base := ens.Root(t)
	root := base + "/r"
	conn := ens.Conn(t)
	c := newCache(t, open(t, ens.Servers()), root, opts...)
	rec := record(t, c)
	waitInit(t, c)
	if c.Snapshot().Len() != 0 {
		t.Fatal("view of an absent root not empty")
	}
	for round := range 2 {
		mustCreate(t, conn, root, []byte("r"))
		mustCreate(t, conn, root+"/x", nil)
		mustCreate(t, conn, root+"/x/y", nil)
		rec.waitFor(t, "Created x/y", func(ev cache.Event) bool { return ev.Type == cache.Created && ev.Path == root+"/x/y" })
		for _, p := range []string{root + "/x/y", root + "/x", root} {
			if err := conn.Delete(p, -1); err != nil {
				t.Fatal(err)
			}
		}
		rec.waitFor(t, "Deleted root", func(ev cache.Event) bool { return ev.Type == cache.Deleted && ev.Path == root })
		if err := c.Sync(ctxFor(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if n := c.Snapshot().Len(); n != 0 {
			t.Fatalf("round %d: %d nodes after the root went", round, n)
		}
	}
	if bad := checkOrder(rec.all(), root); len(bad) > 0 {
		t.Fatalf("order:\n%s", strings.Join(bad, "\n"))
	}
}

// TestUnreadable: a node the cache's client may not read is in the view
// with its Stat (from exists) and Err, the rest of the tree is cached as
// usual, and the node's deletion is seen.
func TestUnreadable(t *testing.T) { inWatchModes(t, testUnreadable) }

func testUnreadable(t *testing.T, opts ...cache.Option) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	owner := ens.Conn(t)
	if err := owner.AddAuth("digest", []byte("owner:secret")); err != nil {
		t.Fatal(err)
	}
	secret := root + "/secret"
	if _, err := owner.Create(secret, []byte("hidden"), 0, zk.DigestACL(zk.PermAll, "owner", "secret")); err != nil {
		t.Fatal(err)
	}
	// Before the root's cleanup (which cannot list it).
	t.Cleanup(func() { owner.Delete(secret, -1) })
	mustCreate(t, conn, root+"/open", []byte("visible"))
	c := newCache(t, open(t, ens.Servers()), root, opts...)
	rec := record(t, c)
	waitInit(t, c)
	n, ok := c.Get(secret)
	if !ok || !errors.Is(n.Err, zk.ErrNoAuth) || n.Data != nil || n.Stat.Czxid == 0 {
		t.Fatalf("secret node: %+v, %v", n, ok)
	}
	if n, ok := c.Get(root + "/open"); !ok || string(n.Data) != "visible" {
		t.Fatalf("open node: %+v %v", n, ok)
	}
	// ZooKeeper does not notify a client of a node it may not read: the
	// node's changes go unseen, its deletion is seen in its parent's
	// listing.
	if err := owner.Delete(secret, -1); err != nil {
		t.Fatal(err)
	}
	if len(opts) > 0 {
		// A persistent watch reports no change of a node the client may
		// not read, its deletion included (ZooKeeper's fix of
		// CVE-2024-23944): with the recursive watch, the deletion is
		// seen at the parent's next listing, after a sibling's creation.
		mustCreate(t, conn, root+"/sibling", nil)
	}
	rec.waitFor(t, "Deleted secret", func(ev cache.Event) bool { return ev.Type == cache.Deleted && ev.Path == secret })
	if closed(c.Untrusted()) {
		t.Fatal("an unreadable node made the view untrusted")
	}
}

// TestInputErrors: bad arguments are errors that errors.Is matches, and
// the cache's methods after Close say ErrClosed.
func TestInputErrors(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	client := open(t, ens.Servers())
	if _, err := cache.New(nil, "/x"); !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("nil client: %v", err)
	}
	for _, p := range []string{"", "x", "/x/", "/a//b", "/a/./b"} {
		if _, err := cache.New(client, p); !errors.Is(err, connection.ErrInvalidPath) {
			t.Fatalf("path %q: %v", p, err)
		}
	}
	for _, o := range []cache.Option{cache.WithMaxDepth(-1), cache.WithConcurrency(0), cache.WithConcurrency(5000)} {
		if _, err := cache.New(client, "/x", o); !errors.Is(err, connection.ErrInvalidOption) {
			t.Fatalf("option: %v", err)
		}
	}
	c := newCache(t, client, ens.Root(t))
	if _, err := c.Listen(context.Background(), cache.WithBuffer(0)); !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("buffer 0: %v", err)
	}
	ch := listen(t, c)
	waitInit(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	for range ch { // closed by Close
	}
	if _, err := c.Listen(context.Background()); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("listen after close: %v", err)
	}
	if err := c.Sync(context.Background()); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("sync after close: %v", err)
	}
	if _, err := c.Trust(context.Background()); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("trust after close: %v", err)
	}
	if !closed(c.Untrusted()) || !errors.Is(c.Err(), cache.ErrClosed) {
		t.Fatalf("done after close: %v, err %v", closed(c.Untrusted()), c.Err())
	}
	if _, ok := c.Get("not a path"); ok {
		t.Fatal("Get of a bad path found something")
	}
}

// TestClientClosed: the client closed under a running cache makes it
// untrusted with connection.ErrClosed; its view stays.
func TestClientClosed(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	mustCreate(t, conn, root+"/a", []byte("a"))
	client := open(t, ens.Servers())
	c := newCache(t, client, root)
	done, err := c.Trust(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	client.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("trust did not end with the client")
	}
	if !errors.Is(c.Err(), connection.ErrClosed) {
		t.Fatalf("err %v", c.Err())
	}
	if n, ok := c.Get(root + "/a"); !ok || string(n.Data) != "a" {
		t.Fatal("view lost with the client")
	}
	if err := c.Sync(ctxFor(t, 5*time.Second)); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("sync: %v", err)
	}
}

// TestShapesAndUnreadableAcrossFaults: a directory cache (depth 1) and a
// selector cache on a tree with a node the client may not read, through
// a short cut and an expiry, with writes inside and outside their shapes
// meanwhile (the unreadable node deleted during the expiry). After each,
// each view equals the server's tree cut to its shape (the unreadable node
// with its Stat and Err while it exists); no event names a path outside
// the shape; the events replay to the view.
func TestShapesAndUnreadableAcrossFaults(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	owner := ens.Conn(t)
	if err := owner.AddAuth("digest", []byte("owner:secret")); err != nil {
		t.Fatal(err)
	}
	makeTree(t, conn, root, 3, 2)
	secret := root + "/a0/secret"
	if _, err := owner.Create(secret, []byte("hidden"), 0, zk.DigestACL(zk.PermAll, "owner", "secret")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Delete(secret, -1) })
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	excluded := func(p string) bool { return strings.Contains(p, "/a1") || strings.HasPrefix(p, root+"/a2/") }
	sel := cache.Selector{
		Accept:  func(p string) bool { return !strings.HasSuffix(p, "/a1") },
		Descend: func(p string) bool { return !strings.HasSuffix(p, "/a2") },
	}
	type shaped struct {
		name string
		c    *cache.Cache
		rec  *recorder
		keep func(p string) bool
	}
	depth1 := newCache(t, client, root, cache.WithMaxDepth(1))
	selc := newCache(t, client, root, cache.WithSelector(sel))
	caches := []shaped{
		{"depth 1", depth1, record(t, depth1), func(p string) bool { return strings.Count(strings.TrimPrefix(p, root), "/") <= 1 }},
		{"selector", selc, record(t, selc), func(p string) bool { return !excluded(p) }},
	}
	ctx := ctxFor(t, time.Minute)
	check := func(when string) {
		t.Helper()
		full := readTree(t, owner, root, -1) // owner may read everything
		for _, sc := range caches {
			if err := sc.c.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := sc.c.Trust(ctx); err != nil {
				t.Fatal(err)
			}
			want := map[string]tnode{}
			for p, n := range full {
				if sc.keep(p) {
					want[p] = n
				}
			}
			view := nodesOf(sc.c.Snapshot())
			if n, ok := view[secret]; ok {
				if w, ok := want[secret]; !ok || !errors.Is(n.Err, zk.ErrNoAuth) || n.Stat.Czxid != w.stat.Czxid {
					t.Fatalf("%s, %s: the unreadable node: %+v", when, sc.name, n)
				}
				// Compared by its Stat alone: its data cannot be read.
				n.Data = want[secret].data
				view[secret] = n
			}
			if d := diff(view, want); d != "" {
				t.Fatalf("%s, %s: the view differs from the server's tree cut to its shape:\n%s", when, sc.name, d)
			}
			for _, ev := range sc.rec.all() {
				if ev.Path != "" && !sc.keep(ev.Path) {
					t.Fatalf("%s, %s: event of a path outside the shape: %v %s", when, sc.name, ev.Type, ev.Path)
				}
			}
			hasEveryEvent(t, sc.rec, sc.c, when+", "+sc.name)
		}
	}
	check("at first")
	write := func(tag string) {
		for _, p := range []string{"/a0", "/a1", "/a2", "/a0/b0", "/a1/b0", "/a2/b1"} {
			if _, err := conn.Set(root+p, []byte(tag), -1); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{"/a0/" + tag, "/a1/" + tag, "/a2/" + tag, "/" + tag} {
			mustCreate(t, conn, root+p, []byte(tag))
		}
	}
	proxy.Cut()
	time.Sleep(200 * time.Millisecond)
	write("cut")
	proxy.Restore()
	check("after a short cut")
	sid := client.Session().ID()
	proxy.Blackhole()
	time.Sleep(500 * time.Millisecond)
	write("expiry")
	if err := owner.Delete(secret, -1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	proxy.Restore()
	check("after an expiry")
	if client.Session().ID() == sid {
		t.Fatal("the session did not change")
	}
}
