package cache_test

// The packed entries, and the entries as the sink's watch table, under
// the cases a random writer makes rarely: the child fields of a node's
// Stat kept with its listing, snapshots walked by names while the tree
// churns, two caches of one tree on one client with one closed (its
// watches moved to the client's table) across a cut and an expiry,
// subtrees remade at once (entries removed while their watches are
// pending: orphans) with the connection cut meanwhile.

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// childFields compares the child fields of the view's Stats (Cversion,
// NumChildren, Pzxid) with the server's, for every node the view holds.
func childFields(view map[string]cache.Node, want map[string]tnode) string {
	var out []string
	for p, w := range want {
		n, ok := view[p]
		if !ok {
			continue // diff's business
		}
		if n.Stat.Cversion != w.stat.Cversion || n.Stat.NumChildren != w.stat.NumChildren || n.Stat.Pzxid != w.stat.Pzxid {
			out = append(out, fmt.Sprintf("%s: cache cversion %d numChildren %d pzxid %d, server %d %d %d",
				p, n.Stat.Cversion, n.Stat.NumChildren, n.Stat.Pzxid, w.stat.Cversion, w.stat.NumChildren, w.stat.Pzxid))
		}
	}
	sort.Strings(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("... %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// sameChildFields fails t unless c's view equals the server's tree, child
// fields (childFields) included.
func sameChildFields(t *testing.T, conn *zk.Conn, c *cache.Cache, when string) {
	t.Helper()
	view, want := equalsServer(t, conn, c, -1, when)
	if d := childFields(view, want); d != "" {
		t.Fatalf("%s: cache of %s: child fields differ from the server's:\n%s", when, c.Path(), d)
	}
}

// TestChildStatFieldsAfterChurn: the Stat's child fields follow
// the node's listing (Node.Stat's doc): at quiescence, with every node's
// children cached, each node's Cversion, NumChildren and Pzxid are the
// server's. A writer creates, deletes and remakes nodes; the connection
// is cut now and then (same session).
func TestChildStatFieldsAfterChurn(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	w := newWriterTree(t, ens, 400, 2*time.Millisecond, 8*time.Second)
	w.wr.start()
	defer w.wr.finish(t)
	c := newCache(t, w.client, w.root)
	rec := record(t, c)
	waitInit(t, c)
	for round := range 6 {
		if round%2 == 1 {
			w.proxy.Cut()
			time.Sleep(80 * time.Millisecond)
			w.proxy.Restore()
		}
		time.Sleep(300 * time.Millisecond)
		when := fmt.Sprintf("round %d", round)
		settleAgainst(t, c, rec, w.wr, w.root, when)
		func() {
			w.wr.pause()
			defer w.wr.resume()
			if err := c.Sync(ctxFor(t, time.Minute)); err != nil {
				t.Fatal(err)
			}
			sameChildFields(t, w.conn, c, when)
		}()
	}
}

// checkSnapshot checks a snapshot against itself: Paths, Get, Children
// and Len agree; every node but the root has its parent; Get names the
// node by the path asked.
func checkSnapshot(s cache.Snapshot, root string) error {
	paths := s.Paths()
	if len(paths) != s.Len() {
		return fmt.Errorf("Paths gives %d paths, Len %d", len(paths), s.Len())
	}
	if !sort.StringsAreSorted(paths) {
		return errors.New("Paths not sorted")
	}
	kids := map[string][]string{}
	for _, p := range paths {
		n, ok := s.Get(p)
		if !ok {
			return fmt.Errorf("Paths names %s, Get does not find it", p)
		}
		if n.Path != p {
			return fmt.Errorf("Get(%s) names %s", p, n.Path)
		}
		if p == root {
			continue
		}
		parent := path.Dir(p)
		if _, ok := s.Get(parent); !ok {
			return fmt.Errorf("%s without its parent", p)
		}
		kids[parent] = append(kids[parent], path.Base(p))
	}
	for _, p := range paths {
		names, ok := s.Children(p)
		if !ok {
			return fmt.Errorf("Children(%s) does not find it", p)
		}
		want := kids[p]
		slices.Sort(want)
		if !slices.Equal(names, want) {
			return fmt.Errorf("Children(%s) = %v, the paths say %v", p, names, want)
		}
	}
	if _, ok := s.Get(root + "/no-such-node"); ok {
		return errors.New("Get finds a node that is not there")
	}
	return nil
}

// TestSnapshotsDuringChurn: snapshots, Get and Children called
// in a loop from several goroutines while a writer changes the tree as
// fast as it can (run it with -race): every snapshot is whole by itself,
// and the cache's own Get and Children agree with the node's path.
func TestSnapshotsDuringChurn(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	wr := newWriter(t, conn, root, 600, time.Millisecond)
	wr.fill(t)
	client := open(t, ens.Servers())
	c := newCache(t, client, root)
	rec := record(t, c)
	waitInit(t, c)
	wr.start()
	defer wr.finish(t)
	var (
		wg      sync.WaitGroup
		stop    = make(chan struct{})
		checked atomic.Int64
		mu      sync.Mutex
		bad     []string
	)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := c.Snapshot()
				if err := checkSnapshot(s, root); err != nil {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("reader %d: %v", g, err))
					mu.Unlock()
					return
				}
				for _, p := range s.Paths() {
					if n, ok := c.Get(p); ok && n.Path != p {
						mu.Lock()
						bad = append(bad, fmt.Sprintf("reader %d: Get(%s) names %s", g, p, n.Path))
						mu.Unlock()
						return
					}
					c.Children(p)
				}
				checked.Add(1)
			}
		}()
	}
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
	settleAgainst(t, c, rec, wr, root, "after the readers")
	t.Logf("%d snapshots checked", checked.Load())
}

// watchesAsServer checks what the caches, the client and the server count
// for session id: each cache two watches per node, the client two per
// node of the union, the server (wchc: data watches) one per node.
func watchesAsServer(t *testing.T, ens *zktest.Ensemble, client *connection.Client, nodes int, cs ...*cache.Cache) error {
	for i, c := range cs {
		if s := c.Stats(); int(s.Watches) != 2*s.Nodes {
			return fmt.Errorf("cache %d of %s: %d watches pending for %d nodes", i, c.Path(), s.Watches, s.Nodes)
		}
	}
	p := client.Stats().PendingWatches
	n := testkit.ServerWatches(t, ens, client.Session().ID())
	if p != 2*nodes {
		return fmt.Errorf("client: %d pending; %d nodes (server: %d data watches)", p, nodes, n)
	}
	if n != nodes {
		return fmt.Errorf("server: %d data watches; %d nodes", n, nodes)
	}
	return nil
}

// TestTwoCachesOfOneTreeOneClosed: two caches of the same tree on
// one client, and another user's GetWatch and ChildrenWatch of some of
// its nodes. One cache is closed (its pending watches move to the
// client's table, told to no one); then the connection is cut while a
// writer changes the tree (same session), and at last the session
// expires. The other cache still gets every change (the watches the two
// share are registered again once, and fire for it), equals the server's
// tree, and it, the client and the server count the same watches; the
// other user's watches keep firing.
func TestTwoCachesOfOneTreeOneClosed(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	w := newWriterTree(t, ens, 400, 2*time.Millisecond, 4*time.Second)
	root, conn, wr, proxy, client := w.root, w.conn, w.wr, w.proxy, w.client
	a := newCache(t, client, root)
	b := newCache(t, client, root)
	rec := record(t, b)
	waitInit(t, a)
	waitInit(t, b)
	// The other user: the root and its first children, watched and
	// watched again.
	kids, _, err := conn.Children(root)
	if err != nil {
		t.Fatal(err)
	}
	watched := []string{root}
	for _, k := range kids[:min(len(kids), 10)] {
		watched = append(watched, root+"/"+k)
	}
	defer otherUser(client, watched)()
	check := func(when string) {
		t.Helper()
		settleAgainst(t, b, rec, wr, root, when)
		wr.pause()
		defer wr.resume()
		watchesAreServers(t, ens, client, when, b, b)
		// The other user's watch of the root fires with the next change.
		_, _, w, err := client.ChildrenWatch(ctxFor(t, 10*time.Second), root)
		if err != nil {
			t.Fatal(err)
		}
		p := fmt.Sprintf("%s/other-%d", root, time.Now().UnixNano())
		mustCreate(t, conn, p, nil)
		select {
		case <-w.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the other user's ChildrenWatch of %s did not fire", when, root)
		}
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(ctxFor(t, time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	check("both caches loaded")
	wr.start()
	defer wr.finish(t)
	time.Sleep(200 * time.Millisecond)
	a.Close()
	time.Sleep(200 * time.Millisecond)
	check("one cache closed")
	for round := range 3 {
		proxy.Cut()
		time.Sleep(300 * time.Millisecond) // the writer writes meanwhile
		proxy.Restore()
		time.Sleep(200 * time.Millisecond)
		check(fmt.Sprintf("cut %d", round))
	}
	sess := client.Session()
	proxy.Blackhole()
	<-sess.Done()
	proxy.Restore()
	time.Sleep(300 * time.Millisecond)
	check("after the expiry")
	if client.Session() == sess {
		t.Fatal("the same session after the expiry")
	}
}

// remakeSubtree deletes dir's children and dir, and makes them again
// with other names, in one transaction: every entry under dir is removed
// from the view while the cache still has watches set on the old nodes'
// paths (orphans), and nodes of the same names come back.
func remakeSubtree(conn *zk.Conn, dir string, n, i int) error {
	kids, _, err := conn.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	var ops []any
	exists := err == nil
	if exists {
		for _, k := range kids {
			ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + k, Version: -1})
		}
		ops = append(ops, &zk.DeleteRequest{Path: dir, Version: -1})
	}
	ops = append(ops, &zk.CreateRequest{Path: dir, Data: []byte(fmt.Sprint(i)), Acl: zk.WorldACL(zk.PermAll)})
	for j := range n {
		// Half the names come back each time, half change.
		name := fmt.Sprintf("k%d", j)
		if j%2 == 1 {
			name = fmt.Sprintf("k%d-%d", j, i%3)
		}
		ops = append(ops, &zk.CreateRequest{Path: dir + "/" + name, Data: []byte(fmt.Sprint(i)), Acl: zk.WorldACL(zk.PermAll)})
	}
	_, err = conn.Multi(ops...)
	return err
}

// TestRemadeSubtreesOrphans: directories remade with their
// children in one transaction, over and over, the connection cut and
// answers dropped now and then (same session), a second cache of one
// directory on the same client closed and opened again: at each pause
// the caches equal the server's tree, and they, the client and the server
// count the same watches (an orphan that the client counts and the server
// lacks is a change missed; one the server holds and no one counts, a
// leak).
func TestRemadeSubtreesOrphans(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	remadeSubtrees(t, true)
}

// TestRemadeSubtreesNoFaults is TestRemadeSubtreesOrphans
// without the faults, for the race detector.
func TestRemadeSubtreesNoFaults(t *testing.T) {
	t.Parallel()
	remadeSubtrees(t, false)
}

func remadeSubtrees(t *testing.T, faults bool) {
	ens := shared.Ensemble(t)
	if faults {
		ens.RequireFaults(t)
	}
	root := ens.Root(t)
	conn := ens.Conn(t)
	const dirs, width = 8, 6
	for d := range dirs {
		if err := remakeSubtree(conn, fmt.Sprintf("%s/d%d", root, d), width, 0); err != nil {
			t.Fatal(err)
		}
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	all := newCache(t, client, root)
	rec := record(t, all)
	waitInit(t, all)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var remakes atomic.Int64
	var werr atomic.Value
	var gate sync.Mutex // held by the test to pause the writer
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			gate.Lock()
			err := remakeSubtree(conn, fmt.Sprintf("%s/d%d", root, i%dirs), width, i)
			gate.Unlock()
			if err != nil {
				werr.Store(err)
				return
			}
			remakes.Add(1)
			time.Sleep(3 * time.Millisecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	var sub *cache.Cache
	for round := range 8 {
		if sub != nil {
			sub.Close()
		}
		sub = newCache(t, client, root+"/d1")
		switch round % 3 * btoi(faults) {
		case 1:
			proxy.Cut()
			time.Sleep(80 * time.Millisecond)
			proxy.Restore()
		case 2:
			proxy.DropReplies()
			time.Sleep(80 * time.Millisecond)
			proxy.Restore()
		}
		time.Sleep(300 * time.Millisecond)
		func() {
			gate.Lock()
			defer gate.Unlock()
			if err := werr.Load(); err != nil {
				t.Fatalf("writer: %v", err)
			}
			ctx := ctxFor(t, time.Minute)
			when := fmt.Sprintf("round %d", round)
			for _, c := range []*cache.Cache{all, sub} {
				waitInit(t, c)
				syncTrusted(t, ctx, c, when)
				sameChildFields(t, conn, c, when)
			}
			hasEveryEvent(t, rec, all, when)
			inServerOrder(t, rec, root, when)
			watchesAreServers(t, ens, client, when, all, all, sub)
		}()
	}
	t.Logf("%d subtrees remade; %d nodes", remakes.Load(), all.Snapshot().Len())
}

// TestNamespaceCutAndExpiry: caches of a client with a namespace
// (the table keeps the client's paths, the server's watches have the
// server's): one of the namespace's root, one of a tree in it. The
// connection is cut while every node is changed (same session: the
// watches registered again must be the server's paths, or the changes go
// unseen), then the session expires. Each time the caches equal the
// server's tree, and the watches counted are the server's.
func TestNamespaceCutAndExpiry(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	ns := ens.Root(t) + "/ns"
	conn := ens.Conn(t)
	mustCreate(t, conn, ns, nil)
	mustCreate(t, conn, ns+"/tree", nil)
	var nodes []string
	for i := range 30 {
		p := fmt.Sprintf("%s/tree/n%d", ns, i)
		mustCreate(t, conn, p, nil)
		nodes = append(nodes, p)
		for j := range 3 {
			q := fmt.Sprintf("%s/k%d", p, j)
			mustCreate(t, conn, q, nil)
			nodes = append(nodes, q)
		}
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second), connection.WithNamespace(ns))
	top := newCache(t, client, "/")
	tree := newCache(t, client, "/tree")
	waitInit(t, top)
	waitInit(t, tree)
	// The server's tree, by the client's paths.
	truth := func(root string) map[string]tnode {
		out := map[string]tnode{}
		for p, n := range readTree(t, conn, path.Join(ns, root), -1) {
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
		watchesAreServers(t, ens, client, when, top, top, tree)
	}
	check("loaded")
	for round := range 2 {
		proxy.Cut()
		for _, p := range nodes {
			if _, err := conn.Set(p, []byte(fmt.Sprintf("cut %d", round)), -1); err != nil {
				t.Fatal(err)
			}
		}
		proxy.Restore()
		check(fmt.Sprintf("cut %d", round))
	}
	sess := client.Session()
	proxy.Blackhole()
	<-sess.Done()
	for _, p := range nodes {
		if _, err := conn.Set(p, []byte("expired"), -1); err != nil {
			t.Fatal(err)
		}
	}
	proxy.Restore()
	check("after the expiry")
	// And changes after it.
	for _, p := range nodes {
		if _, err := conn.Set(p, []byte("after"), -1); err != nil {
			t.Fatal(err)
		}
	}
	check("changed after the expiry")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestClosedCachesLeaveTheServersWatches: two caches of one tree
// on one client, closed: their watches stay on the server until they
// fire, and the client counts them there (moved to its table, told to no
// one), once each node and kind; as they fire (every node's data set,
// then a child added to every node), the count goes down with the
// server's, to none. A cut (same session) in between registers them
// again: they still fire.
func TestClosedCachesLeaveTheServersWatches(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	nodes := []string{root}
	for i := range 20 {
		p := fmt.Sprintf("%s/n%d", root, i)
		mustCreate(t, conn, p, nil)
		nodes = append(nodes, p)
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	a := newCache(t, client, root)
	b := newCache(t, client, root)
	waitInit(t, a)
	waitInit(t, b)
	counts := func(when string, want, wantData int) {
		t.Helper()
		zktest.Eventually(t, 10*time.Second, when, func() error {
			p := client.Stats().PendingWatches
			n := testkit.ServerWatches(t, ens, client.Session().ID())
			if p != want || n != wantData {
				return fmt.Errorf("PendingWatches %d (want %d), server %d data watches (want %d)", p, want, n, wantData)
			}
			return nil
		})
	}
	counts("both caches open", 2*len(nodes), len(nodes))
	a.Close()
	b.Close()
	counts("both caches closed", 2*len(nodes), len(nodes))
	proxy.Cut()
	time.Sleep(50 * time.Millisecond)
	proxy.Restore()
	if err := client.Sync(ctxFor(t, time.Minute), root); err != nil {
		t.Fatal(err)
	}
	counts("after a cut", 2*len(nodes), len(nodes))
	for _, p := range nodes {
		if _, err := conn.Set(p, []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
	}
	counts("every node's data set", len(nodes), 0)
	for _, p := range nodes {
		mustCreate(t, conn, p+"/kid", nil)
	}
	counts("a child added to every node", 0, 0)
}

// TestLookupOddPaths: Get and Children of the cache and of its
// snapshot, found by names now, with paths that are not a node's: none
// found, nothing panics; the root, "/" included, found.
func TestLookupOddPaths(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	mustCreate(t, conn, root+"/a", nil)
	mustCreate(t, conn, root+"/a/b", nil)
	mustCreate(t, conn, root+"/ab", nil)
	client := open(t, ens.Servers())
	c := newCache(t, client, root)
	waitInit(t, c)
	top := newCache(t, client, "/", cache.WithMaxDepth(1))
	waitInit(t, top)
	snap := c.Snapshot()
	odd := []string{"", "/", "a", root + "/", root + "//a", root + "/a/", root + "/a//b", root + "/a/b/", root + "/a/b/c",
		root + "a", root + "/b", root[:len(root)-1], root + "/a\x00", root + "/./a", root + "/a/../a", "//", "/" + root}
	for _, p := range odd {
		if p == "/" {
			continue
		}
		if n, ok := c.Get(p); ok {
			t.Errorf("Get(%q) found %s", p, n.Path)
		}
		if _, ok := c.Children(p); ok {
			t.Errorf("Children(%q) found it", p)
		}
		if n, ok := snap.Get(p); ok {
			t.Errorf("the snapshot's Get(%q) found %s", p, n.Path)
		}
		if _, ok := snap.Children(p); ok {
			t.Errorf("the snapshot's Children(%q) found it", p)
		}
	}
	for _, p := range []string{root, root + "/a", root + "/a/b", root + "/ab"} {
		if n, ok := snap.Get(p); !ok || n.Path != p {
			t.Errorf("the snapshot's Get(%q) = %q, %v", p, n.Path, ok)
		}
	}
	if kids, ok := snap.Children(root); !ok || !slices.Equal(kids, []string{"a", "ab"}) {
		t.Errorf("Children(%s) = %v, %v", root, kids, ok)
	}
	ts := top.Snapshot()
	if n, ok := ts.Get("/"); !ok || n.Path != "/" {
		t.Errorf("the snapshot of / has no /: %v", ok)
	}
	if _, ok := ts.Get(path.Dir(root)); !ok && path.Dir(root) != "/" && strings.Count(root, "/") == 2 {
		t.Errorf("the snapshot of / to depth 1 lacks %s", path.Dir(root))
	}
	for _, p := range ts.Paths() {
		if n, ok := ts.Get(p); !ok || n.Path != p {
			t.Errorf("the snapshot of /: Paths names %s, Get gives %q, %v", p, n.Path, ok)
		}
	}
	var zero cache.Snapshot
	if _, ok := zero.Get("/"); ok || zero.Len() != 0 || zero.Paths() != nil {
		t.Error("the zero Snapshot holds something")
	}
}

// TestCacheClosedWhileCutOff: two caches of one tree on one
// client; the connection is cut, every node changed and a few added and
// deleted, and one cache is closed while the client is reconnecting (its
// watches move to the client's table as the reconnection registers
// them). The other cache gets every change, and the client, the cache
// and the server count the same watches. Round after round, a new cache
// in place of the closed one.
func TestCacheClosedWhileCutOff(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	var nodes []string
	for i := range 40 {
		p := fmt.Sprintf("%s/n%d", root, i)
		mustCreate(t, conn, p, nil)
		nodes = append(nodes, p)
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	sess := client.Session()
	b := newCache(t, client, root)
	rec := record(t, b)
	waitInit(t, b)
	for round := range 6 {
		a := newCache(t, client, root)
		waitInit(t, a)
		proxy.Cut()
		for i, p := range nodes {
			if _, err := conn.Set(p, []byte(fmt.Sprint(round)), -1); err != nil {
				t.Fatal(err)
			}
			if i%10 == round%10 {
				mustCreate(t, conn, fmt.Sprintf("%s/r%d", p, round), nil)
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(time.Duration(round*20) * time.Millisecond)
			a.Close()
		}()
		time.Sleep(60 * time.Millisecond)
		proxy.Restore()
		<-done
		settledChecks(t, ens, client, conn, fmt.Sprintf("round %d", round), rec, b, b)
	}
	if client.Session() != sess {
		t.Fatal("a new session")
	}
}

// TestCachesSwappedOnSlowReconnect: answers come late (the
// reconnection's re-registration, the caches' bulk reads), the connection
// is cut and comes back, and meanwhile one cache of the tree is closed
// and another made in its place (its bulk reads set the watches the
// closed one's moved to the client's table); a writer changes the tree
// throughout. At each pause the open caches equal the server's tree and
// the watches counted are the server's.
func TestCachesSwappedOnSlowReconnect(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	w := newWriterTree(t, ens, 300, 3*time.Millisecond, 8*time.Second)
	root, wr, proxy, client := w.root, w.wr, w.proxy, w.client
	sess := client.Session()
	a, b, rec := w.twoCaches(t)
	wr.start()
	defer wr.finish(t)
	for round := range 5 {
		proxy.DelayReplies(time.Duration(100+50*round) * time.Millisecond)
		proxy.Cut()
		time.Sleep(50 * time.Millisecond)
		proxy.Restore()
		proxy.DelayReplies(time.Duration(100+50*round) * time.Millisecond)
		time.Sleep(time.Duration(20*round) * time.Millisecond)
		a.Close()
		a = newCache(t, client, root)
		time.Sleep(150 * time.Millisecond)
		proxy.DelayReplies(0)
		waitInit(t, a)
		time.Sleep(200 * time.Millisecond)
		when := fmt.Sprintf("round %d", round)
		w.pausedChecks(t, when, rec, b, a, b)
		inServerOrder(t, rec, root, when)
	}
	if client.Session() != sess {
		t.Fatal("a new session")
	}
}

// TestCacheClosedAcrossExpiry: two caches of one tree on one
// client whose session expires, round after round; one cache is closed
// at a different moment each round (cut off, the session just lost, the
// new session's rebuild under way) and another made. The other cache
// rebuilds in each new session, equals the server's tree, and it, the
// client and the server count the same watches: the closed cache's
// watches of the old session end with it, those of the new one are
// counted once.
func TestCacheClosedAcrossExpiry(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	w := newWriterTree(t, ens, 300, 3*time.Millisecond, 2*time.Second)
	root, wr, proxy, client := w.root, w.wr, w.proxy, w.client
	a, b, rec := w.twoCaches(t)
	wr.start()
	defer wr.finish(t)
	for round := range 3 {
		sess := client.Session()
		proxy.Blackhole()
		if round == 0 {
			a.Close()
			a = newCache(t, client, root)
		}
		<-sess.Done()
		if round == 1 {
			a.Close()
			a = newCache(t, client, root)
		}
		proxy.Restore()
		if round == 2 {
			time.Sleep(30 * time.Millisecond)
			a.Close()
			a = newCache(t, client, root)
		}
		time.Sleep(300 * time.Millisecond)
		w.pausedChecks(t, fmt.Sprintf("round %d", round), rec, b, a, b)
		if client.Session() == sess {
			t.Fatalf("round %d: the same session after the expiry", round)
		}
	}
}
