package cache_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// watchModes are the two ways a cache follows the server: a data and a
// child watch per node, or one recursive watch on the root.
var watchModes = []struct {
	name string
	opts []cache.Option
}{
	{"one-shot watches", nil},
	{"recursive watch", []cache.Option{cache.WithRecursiveWatch()}},
}

// inWatchModes runs f in each watch mode, as a subtest.
func inWatchModes(t *testing.T, f func(t *testing.T, opts ...cache.Option)) {
	for _, m := range watchModes {
		t.Run(m.name, func(t *testing.T) { f(t, m.opts...) })
	}
}

// serverWatchesWithin waits until the server lists want watched paths for
// session id (wchc), and fails t if it does not within d.
func serverWatchesWithin(t *testing.T, ens *zktest.Ensemble, id int64, want int, d time.Duration, when string) {
	t.Helper()
	zktest.Eventually(t, d, when, func() error {
		if n := testkit.ServerWatches(t, ens, id); n != want {
			return fmt.Errorf("%d watched paths of session %#x on the server, want %d", n, id, want)
		}
		return nil
	})
}

// TestRecursiveWatchIsTheCachesOneServerWatch: a cache of a tree of 16
// nodes holds one watch on the server with WithRecursiveWatch (the root's,
// in the server's own list of the session's watches), against one data
// watch per node without it; no read of the recursive cache sets a
// one-shot watch (the client has none pending); the view follows changes
// of the root and below it; the recursive cache's Close leaves no watch of
// its session on the server.
func TestRecursiveWatchIsTheCachesOneServerWatch(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	makeTree(t, conn, root, 3, 4)
	nodes := 1 + 3 + 3*4
	ctx := ctxFor(t, time.Minute)
	for _, m := range watchModes {
		client := open(t, ens.Servers())
		c, err := cache.New(client, root, m.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Trust(ctx); err != nil {
			t.Fatal(err)
		}
		if n := c.Snapshot().Len(); n != nodes {
			t.Fatalf("%s: %d nodes in the view, want %d", m.name, n, nodes)
		}
		sid := client.Session().ID()
		want := nodes // wchc lists the data watches: one a node
		if m.opts != nil {
			want = 1
		}
		serverWatchesWithin(t, ens, sid, want, 10*time.Second, m.name+": the cache's watches on the server")
		if m.opts != nil {
			if s := c.Stats(); s.Watches != 1 {
				t.Errorf("%s: Stats().Watches %d, want 1", m.name, s.Watches)
			}
			// No read set a one-shot watch, on the root or below.
			if n := client.Stats().PendingWatches; n != 0 {
				t.Errorf("%s: %d one-shot watches pending on the client", m.name, n)
			}
		}
		// Changes of the root and below it, at every depth, are followed:
		// the root's data set three times, then nodes below (ZooKeeper
		// 3.8 stops reporting both after the root's next change if a
		// read of the same client set a one-shot watch on it).
		for i := range 3 {
			if _, err := conn.Set(root, fmt.Appendf(nil, "root%d", i), -1); err != nil {
				t.Fatal(err)
			}
			if err := c.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if n, _ := c.Get(root); string(n.Data) != fmt.Sprintf("root%d", i) {
				t.Fatalf("%s: root's data %q after set %d", m.name, n.Data, i)
			}
		}
		mustCreate(t, conn, root+"/a0/b0/deep", []byte("d"))
		if _, err := conn.Set(root+"/a1/b2", []byte("changed"), -1); err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(root+"/a2/b3", -1); err != nil {
			t.Fatal(err)
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
			t.Fatalf("%s: view after changes:\n%s", m.name, d)
		}
		if m.opts != nil {
			serverWatchesWithin(t, ens, sid, 1, 10*time.Second, m.name+": after changes")
			if n := client.Stats().PendingWatches; n != 0 {
				t.Errorf("%s: %d one-shot watches pending on the client after changes", m.name, n)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("%s: Close: %v", m.name, err)
			}
			serverWatchesWithin(t, ens, sid, 0, 10*time.Second, m.name+": after Close")
		} else {
			c.Close()
		}
		// Restore the tree for the next mode.
		if _, err := conn.Set(root, nil, -1); err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(root+"/a0/b0/deep", -1); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, conn, root+"/a2/b3", []byte(root+"/a2/b3"))
	}
}

// TestRecursiveWatchSharedWithAWatcher: a recursive watcher and a
// recursive cache of one root on one client share the server's watch:
// closing the cache leaves it for the watcher, closing the watcher takes
// it off. A watcher of the root without WithRecursive makes the cache's
// New fail with watch.ErrModeConflict, and leaves nothing behind.
func TestRecursiveWatchSharedWithAWatcher(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	client := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	wr, err := watch.New(ctx, client, root, watch.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	c := newCache(t, client, root, cache.WithRecursiveWatch())
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, conn, root+"/x", []byte("x"))
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n, ok := c.Get(root + "/x"); !ok || string(n.Data) != "x" {
		t.Fatalf("view of /x: %+v %v", n, ok)
	}
	sid := client.Session().ID()
	serverWatchesWithin(t, ens, sid, 1, 10*time.Second, "watcher and cache")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	serverWatchesWithin(t, ens, sid, 1, 10*time.Second, "the watcher's, after the cache's Close")
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	serverWatchesWithin(t, ens, sid, 0, 10*time.Second, "after the watcher's Close")

	plain, err := watch.New(ctx, client, root)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if c, err := cache.New(client, root, cache.WithRecursiveWatch()); !errors.Is(err, watch.ErrModeConflict) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a recursive cache of a root watched without WithRecursive: %v, want watch.ErrModeConflict", err)
	}
}

// TestChangesWhileCutOffInBothWatchModes: nodes created, changed, deleted
// (a subtree among them, and a node deleted and made again) while the
// cache's client is cut off, within its session: the view is untrusted
// during the cut, trusted again after it, and then equal to the server's
// tree; the events replay to it, in the server's order per path. With the
// recursive watch, the watch is set again on the new connection (the
// server lists it for the session).
func TestChangesWhileCutOffInBothWatchModes(t *testing.T) {
	inWatchModes(t, func(t *testing.T, opts ...cache.Option) {
		skipReconnectsUnderRace(t)
		t.Parallel()
		changedWhileAway(t, opts, func(p *zktest.Proxy) { p.Cut() }, false)
	})
}

// TestChangesWhileExpiredInBothWatchModes: the same changes while the
// client is cut off and its session expires: the view in the new session
// is the server's tree.
func TestChangesWhileExpiredInBothWatchModes(t *testing.T) {
	inWatchModes(t, func(t *testing.T, opts ...cache.Option) {
		skipReconnectsUnderRace(t)
		t.Parallel()
		changedWhileAway(t, opts, func(p *zktest.Proxy) {
			p.Cut()
			if _, err := p.ExpireSession(); err != nil {
				t.Fatal(err)
			}
		}, true)
	})
}

func changedWhileAway(t *testing.T, opts []cache.Option, away func(*zktest.Proxy), newSession bool) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	makeTree(t, conn, root, 4, 3)
	mustCreate(t, conn, root+"/a3/b0/c", []byte("c"))
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	c := newCache(t, client, root, opts...)
	rec := record(t, c)
	ctx := ctxFor(t, time.Minute)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := client.Session().ID()
	mark := len(rec.all())
	away(proxy)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("view still trusted 10 s after the cut")
	}
	// Created, at every depth; changed; deleted; a subtree deleted; a
	// node deleted and made again; a subtree made.
	mustCreate(t, conn, root+"/new", []byte("n"))
	mustCreate(t, conn, root+"/a0/b0/new", []byte("n"))
	if _, err := conn.Set(root+"/a1", []byte("v1"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(root+"/a2/b1", []byte("v1"), -1); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(root+"/a0/b2", -1); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/a3/b0/c", "/a3/b0", "/a3/b1", "/a3/b2", "/a3"} {
		if err := conn.Delete(root+p, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Delete(root+"/a2/b2", -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, conn, root+"/a2/b2", []byte("again"))
	mustCreate(t, conn, root+"/sub", nil)
	mustCreate(t, conn, root+"/sub/x", []byte("x"))
	want := readTree(t, conn, root, -1) // nothing changes after this
	proxy.Restore()
	waitFrom(t, rec, mark, "Trusted after the outage", func(ev cache.Event) bool { return ev.Type == cache.Trusted })
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), want); d != "" {
		t.Fatalf("view after the outage:\n%s", d)
	}
	if d := sameStats(nodesOf(c.Snapshot()), want); d != "" {
		t.Fatalf("Stats after the outage:\n%s", d)
	}
	hasEveryEvent(t, rec, c, "after the outage")
	inServerOrder(t, rec, root, "after the outage")
	s := client.Session()
	if (s.ID() != sid) != newSession {
		t.Fatalf("session %#x after %#x; want a new one: %v", s.ID(), sid, newSession)
	}
	if len(opts) > 0 {
		serverWatchesWithin(t, ens, s.ID(), 1, 10*time.Second, "the recursive watch after the outage")
	}
	// The view follows the server after the outage too.
	mustCreate(t, conn, root+"/after", []byte("a"))
	if err := conn.Delete(root+"/sub/x", -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatalf("view after changes after the outage:\n%s", d)
	}
	var types []string
	for _, ev := range rec.all()[mark:] {
		if ev.Path != "" {
			types = append(types, ev.Type.String()+" "+strings.TrimPrefix(ev.Path, root))
		} else {
			types = append(types, ev.Type.String())
		}
	}
	t.Logf("events from the outage on: %s", strings.Join(types, ", "))
}

// TestDepthAndSelectorWithRecursiveWatch: with the recursive watch, the
// changes beyond WithMaxDepth, or outside the Selector, make no event and
// no read, and the view stays the server's tree within its shape.
func TestDepthAndSelectorWithRecursiveWatch(t *testing.T) {
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
	ctx := ctxFor(t, time.Minute)
	cases := []struct {
		name    string
		opt     cache.Option
		depth   int
		keep    func(p string) bool
		outside []string // paths whose changes the view leaves out
	}{
		{"directory", cache.WithMaxDepth(1), 1, nil, []string{"/a0/b0", "/a0/b1"}},
		{"selector", cache.WithSelector(sel), -1, func(p string) bool {
			return !strings.Contains(p, "/a1") && !strings.Contains(p, "/a2/")
		}, []string{"/a1", "/a1/b0", "/a2/b1"}},
	}
	for _, tc := range cases {
		c := newCache(t, client, root, tc.opt, cache.WithRecursiveWatch())
		rec := record(t, c)
		if _, err := c.Trust(ctx); err != nil {
			t.Fatal(err)
		}
		hasEveryEvent(t, rec, c, tc.name+" loaded")
		reads, mark := c.Stats().Reads, len(rec.all())
		for i, p := range tc.outside {
			if _, err := conn.Set(root+p, fmt.Appendf(nil, "out%d", i), -1); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, conn, root+p+"/new", nil)
			if err := conn.Delete(root+p+"/new", -1); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if n := c.Stats().Reads - reads; n != 0 {
			t.Errorf("%s: %d reads for changes outside the view", tc.name, n)
		}
		for _, ev := range rec.all()[mark:] {
			if ev.Path != "" {
				t.Errorf("%s: event %v %s for a change outside the view", tc.name, ev.Type, ev.Path)
			}
		}
		want := readTree(t, conn, root, tc.depth)
		for p := range want {
			if tc.keep != nil && !tc.keep(p) {
				delete(want, p)
			}
		}
		if d := diff(nodesOf(c.Snapshot()), want); d != "" {
			t.Fatalf("%s:\n%s", tc.name, d)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecursiveWatchSetBeforeTheFirstLoad: nodes created, changed and
// deleted as fast as a writer can while the cache starts: the first load
// and the changes during it end in the server's tree, without a reconnect.
func TestRecursiveWatchSetBeforeTheFirstLoad(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	makeTree(t, conn, root, 10, 5)
	client := open(t, ens.Servers())
	stop := make(chan struct{})
	written := make(chan error, 1)
	go func() {
		var err error
		defer func() { written <- err }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			a := fmt.Sprintf("%s/a%d", root, i%10)
			p := fmt.Sprintf("%s/n%d", a, i)
			if _, err = conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				return
			}
			if _, err = conn.Set(a, fmt.Appendf(nil, "v%d", i), -1); err != nil {
				return
			}
			if i%3 == 0 {
				if err = conn.Delete(p, -1); err != nil {
					return
				}
			}
		}
	}()
	c := newCache(t, client, root, cache.WithRecursiveWatch())
	rec := record(t, c)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatalf("view after the load under writes:\n%s", d)
	}
	hasEveryEvent(t, rec, c, "after the writes")
	inServerOrder(t, rec, root, "after the writes")
	t.Logf("%d nodes, %d reads", c.Snapshot().Len(), c.Stats().Reads)
}

// TestRecursiveCacheClosedWhileCutOff: a recursive cache of a subtree is
// closed while its client's connection is cut and changes are made, at
// several moments of the reconnection, round after round; another
// recursive cache of the whole tree on the same client follows every
// change, and once things are still the server holds that cache's watch
// alone for the session: the closed cache's watch is neither left behind
// nor set again on the new connection.
func TestRecursiveCacheClosedWhileCutOff(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	sub := root + "/sub"
	mustCreate(t, conn, sub, nil)
	var nodes []string
	for i := range 20 {
		p := fmt.Sprintf("%s/n%d", sub, i)
		mustCreate(t, conn, p, nil)
		nodes = append(nodes, p)
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	sid := client.Session().ID()
	b := newCache(t, client, root, cache.WithRecursiveWatch())
	rec := record(t, b)
	ctx := ctxFor(t, 2*time.Minute)
	if _, err := b.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		a := newCache(t, client, sub, cache.WithRecursiveWatch())
		if _, err := a.Trust(ctx); err != nil {
			t.Fatal(err)
		}
		serverWatchesWithin(t, ens, sid, 2, 10*time.Second, fmt.Sprintf("round %d: two caches", round))
		proxy.Cut()
		for i, p := range nodes {
			if _, err := conn.Set(p, []byte(fmt.Sprint(round)), -1); err != nil {
				t.Fatal(err)
			}
			if i%5 == round {
				mustCreate(t, conn, fmt.Sprintf("%s/r%d", p, round), nil)
			}
		}
		closed := make(chan error, 1)
		go func() {
			time.Sleep(time.Duration(round*20) * time.Millisecond)
			closed <- a.Close()
		}()
		time.Sleep(40 * time.Millisecond)
		proxy.Restore()
		if err := <-closed; err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if _, err := b.Trust(ctx); err != nil {
			t.Fatal(err)
		}
		settledEqualsServer(t, ctx, conn, b, fmt.Sprintf("round %d", round))
		hasEveryEvent(t, rec, b, fmt.Sprintf("round %d", round))
		serverWatchesWithin(t, ens, sid, 1, 10*time.Second, fmt.Sprintf("round %d: the closed cache's watch gone", round))
		if s := client.Session().ID(); s != sid {
			t.Fatalf("round %d: a new session %#x; the test wants reconnects of one", round, s)
		}
	}
	inServerOrder(t, rec, root, "at the end")
}

// TestRecursiveWatchInANamespace: recursive caches of a client with a
// namespace, one of the namespace's root and one of a tree in it (the
// server's watch paths are the server's, the notifications name the
// client's paths, one notification reaches both caches): nodes changed,
// created and deleted, then the same while the connection is cut, then
// while the session expires; each time both views equal the server's
// tree, and the server holds the two watches of the session.
func TestRecursiveWatchInANamespace(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	ns := ens.Root(t) + "/ns"
	conn := ens.Conn(t)
	mustCreate(t, conn, ns, nil)
	mustCreate(t, conn, ns+"/tree", nil)
	makeTree(t, conn, ns+"/tree", 6, 3)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second), connection.WithNamespace(ns))
	top := newCache(t, client, "/", cache.WithRecursiveWatch())
	tree := newCache(t, client, "/tree", cache.WithRecursiveWatch())
	truth := func(root string) map[string]tnode {
		out := map[string]tnode{}
		full := ns + root
		if root == "/" {
			full = ns
		}
		for p, n := range readTree(t, conn, full, -1) {
			q := strings.TrimPrefix(p, ns)
			if q == "" {
				q = "/"
			}
			out[q] = n
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		ctx := ctxFor(t, time.Minute)
		for _, c := range []*cache.Cache{top, tree} {
			syncTrusted(t, ctx, c, when)
			if d := diff(nodesOf(c.Snapshot()), truth(c.Path())); d != "" {
				t.Fatalf("%s: cache of %s differs from the server:\n%s", when, c.Path(), d)
			}
		}
		serverWatchesWithin(t, ens, client.Session().ID(), 2, 10*time.Second, when+": the two recursive watches")
	}
	change := func(round int) {
		t.Helper()
		for i := range 6 {
			p := fmt.Sprintf("%s/tree/a%d", ns, i)
			if _, err := conn.Set(p+"/b0", fmt.Appendf(nil, "r%d", round), -1); err != nil {
				t.Fatal(err)
			}
		}
		mustCreate(t, conn, fmt.Sprintf("%s/tree/a0/new%d", ns, round), nil)
		mustCreate(t, conn, fmt.Sprintf("%s/top%d", ns, round), nil)
		if err := conn.Delete(fmt.Sprintf("%s/tree/a%d/b2", ns, round+1), -1); err != nil {
			t.Fatal(err)
		}
	}
	check("loaded")
	change(0)
	check("after changes")
	sid := client.Session().ID()
	proxy.Cut()
	change(1)
	time.Sleep(300 * time.Millisecond)
	proxy.Restore()
	check("after a cut")
	if client.Session().ID() != sid {
		t.Fatal("a new session after a short cut")
	}
	proxy.Cut()
	if _, err := proxy.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	change(2)
	proxy.Restore()
	check("after an expiry")
	if client.Session().ID() == sid {
		t.Fatal("the same session after an expiry")
	}
}

// TestRecursiveCacheClosedWhileBlackholed: Close of a recursive cache
// whose server stopped answering waits for the removal's answer until the
// client finds the connection lost (within the session's timeout, before
// Close's bound), and returns without an error: the watch went with the
// connection. After the reconnect of the same session the server holds no
// watch of it.
func TestRecursiveCacheClosedWhileBlackholed(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	makeTree(t, ens.Conn(t), root, 2, 2)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	c := newCache(t, client, root, cache.WithRecursiveWatch())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	sid := client.Session().ID()
	serverWatchesWithin(t, ens, sid, 1, 10*time.Second, "before")
	proxy.Blackhole()
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close while blackholed: %v", err)
	}
	took := time.Since(start)
	proxy.Restore()
	if _, err := client.WaitSession(ctx); err != nil {
		t.Fatal(err)
	}
	if s := client.Session().ID(); s != sid {
		t.Fatalf("a new session %#x; the test wants the same", s)
	}
	serverWatchesWithin(t, ens, sid, 0, 10*time.Second, "after the reconnect")
	t.Logf("Close took %v while blackholed", took.Round(time.Millisecond))
}
