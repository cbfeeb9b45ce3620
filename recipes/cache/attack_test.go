package cache_test

// Attacks on the cache's promises that held: the cases the fault test's
// random writer makes rarely, made on purpose.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestReplacedWhileCutOffExpired: while the client is cut off beyond its
// session, a parent is deleted and created again with other children, a
// leaf is deleted and created again and set back to the same version, and
// a new branch three levels deep comes. In the new session the view
// equals the server's tree; the events replayed onto the first Resync give
// it, in version order per path, parents' Created before children's and
// children's Deleted before parents'; no Deleted names a node that still
// exists; and the outage's events concern only the paths written. (The
// same within the session: TestReplacedParentWhileCutOffGivesSpuriousEvents.)
func TestReplacedWhileCutOffExpired(t *testing.T) {
	t.Parallel()
	replacedWhileCutOff(t, 4500*time.Millisecond, (*zktest.Proxy).Blackhole, true)
}

// replacedWhileCutOff is TestReplacedWhileCutOffExpired with a fault of
// hold (cut: Cut or Blackhole), and lost: whether it ends the session.
func replacedWhileCutOff(t *testing.T, hold time.Duration, cut func(p *zktest.Proxy), lost bool) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	base := ens.Root(t)
	conn := ens.Conn(t)
	root := base + "/r"
	create := func(p, data string) {
		t.Helper()
		mustCreate(t, conn, p, []byte(data))
	}
	create(root, "root")
	for _, p := range []string{"/p", "/p/a", "/p/b", "/p/b/deep", "/q", "/q/x", "/keep", "/keep/k"} {
		create(root+p, p)
	}
	for range 3 {
		if _, err := conn.Set(root+"/q/x", []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(3*time.Second))
	c := newCache(t, client, root)
	rec := record(t, c)
	ctx := ctxFor(t, time.Minute)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := nodesOf(c.Snapshot())
	sid := client.Session().ID()
	mark := waitFrom(t, rec, 0, "Trusted", func(ev cache.Event) bool { return ev.Type == cache.Trusted })
	cut(proxy)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still trusted 10 s after the fault")
	}
	// The parent p, with other children.
	for _, p := range []string{"/p/b/deep", "/p/b", "/p/a", "/p"} {
		if err := conn.Delete(root+p, -1); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/p", "/p/c", "/p/a"} {
		create(root+p, "new "+p)
	}
	// The leaf q/x, at the same version as before.
	if err := conn.Delete(root+"/q/x", -1); err != nil {
		t.Fatal(err)
	}
	create(root+"/q/x", "x")
	for range 3 {
		if _, err := conn.Set(root+"/q/x", []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
	}
	// A new branch.
	for _, p := range []string{"/n", "/n/m", "/n/m/o"} {
		create(root+p, p)
	}
	time.Sleep(hold)
	proxy.Restore()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if got := client.Session().ID() != sid; got != lost {
		t.Fatalf("new session %v, want %v", got, lost)
	}
	want := readTree(t, conn, root, -1)
	if d := diff(nodesOf(c.Snapshot()), want); d != "" {
		t.Fatalf("the view differs from the server:\n%s", d)
	}
	zktest.Eventually(t, 10*time.Second, "the events replay to the server's tree", func() error {
		if d := diff(replay(rec.all()), want); d != "" {
			return errors.New(d)
		}
		return nil
	})
	evs := rec.all()
	if bad := spuriousDeletes(evs, want); len(bad) > 0 {
		t.Errorf("Deleted of nodes that exist:\n%s", strings.Join(bad, "\n"))
	}
	if bad := checkOrder(evs, root); len(bad) > 0 {
		t.Fatalf("order:\n%s\nevents:\n%s", strings.Join(bad, "\n"), detail(evs[mark:], root))
	}
	// Only written paths: everything under p and n, q/x; nothing of
	// keep, q or the root unless replaced.
	for _, ev := range evs[mark:] {
		switch ev.Type {
		case cache.Created, cache.Changed, cache.Deleted:
		default:
			continue
		}
		rel := strings.TrimPrefix(ev.Path, root)
		if rel == "" || rel == "/q" || strings.HasPrefix(rel, "/keep") {
			t.Errorf("event of a path not written: %v %s", ev.Type, ev.Path)
		}
	}
	// q/x: one Deleted and one Created (a new czxid, same version).
	var qx []string
	for _, ev := range evs[mark:] {
		if ev.Path == root+"/q/x" {
			qx = append(qx, ev.Type.String())
		}
	}
	if strings.Join(qx, " ") != "DELETED CREATED" {
		t.Errorf("events of q/x: %v, want DELETED CREATED", qx)
	}
	if n := before[root+"/q/x"]; n.Stat.Version != want[root+"/q/x"].stat.Version {
		t.Fatalf("q/x version moved (%d, %d): not the case under test", n.Stat.Version, want[root+"/q/x"].stat.Version)
	}
	t.Logf("events after the fault: %s", summary(evs[mark:]))
}

// TestCloseDuringLoadAndReconnect: Close while the first load of 2,000
// nodes is in flight, and Close while the client reconnects, return
// promptly; the listeners' channels close; nothing is left running
// (goleak in TestMain); a Sync or Trust waiting at Close fails with
// ErrClosed (unless it was done before).
func TestCloseDuringLoadAndReconnect(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	var reqs []any
	for i := range 2000 {
		reqs = append(reqs, &zk.CreateRequest{Path: fmt.Sprintf("%s/n%d", root, i), Data: []byte("d"), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 200 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	closeWithin := func(c *cache.Cache, ch <-chan cache.Event, waiters ...func() error) {
		t.Helper()
		errs := make(chan error, len(waiters))
		for _, w := range waiters {
			go func() { errs <- w() }()
		}
		time.Sleep(20 * time.Millisecond) // let them wait
		at := time.Now()
		c.Close()
		if d := time.Since(at); d > 5*time.Second {
			t.Errorf("Close took %v", d)
		}
		for range ch {
		}
		for range waiters {
			select {
			case err := <-errs:
				if err != nil && !errors.Is(err, cache.ErrClosed) {
					t.Errorf("a waiter at Close: %v, want nil (done before it) or ErrClosed", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a waiter still waiting 5 s after Close")
			}
		}
		c.Close() // idempotent
	}
	ctx := context.Background()
	for range 3 {
		c, err := cache.New(client, root)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := c.Listen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the load is under way
		closeWithin(c, ch, func() error { return c.Sync(ctx) }, func() error { _, err := c.Trust(ctx); return err })
	}
	c, err := cache.New(client, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trust(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	for i := range 50 {
		if _, err := conn.Set(fmt.Sprintf("%s/n%d", root, i*7), []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
	}
	proxy.Restore()
	time.Sleep(1100 * time.Millisecond) // go-zookeeper reconnects after a second
	closeWithin(c, ch, func() error { return c.Sync(ctx) }, func() error {
		for {
			// Trust until Close: it may return a trust period first.
			done, err := c.Trust(ctx)
			if err != nil {
				return err
			}
			<-done
		}
	})
	if _, err := c.Listen(ctx); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("Listen after Close: %v", err)
	}
}

// TestCancelledContexts: Trust, Sync and Listen give up with their
// context's error while the client is cut off, and the cache goes on:
// once the connection is back a Sync succeeds and the view equals the
// server's tree.
func TestCancelledContexts(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	makeTree(t, conn, root, 4, 3)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	c := newCache(t, client, root)
	done, err := c.Trust(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	<-done
	if _, err := conn.Set(root+"/a0", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		if _, err := c.Trust(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Trust while cut off: %v", err)
		}
		if err := c.Sync(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sync while cut off: %v", err)
		}
		lctx, lcancel := context.WithCancel(context.Background())
		ch, err := c.Listen(lctx)
		if err != nil {
			t.Fatal(err)
		}
		<-ch // the Resync
		lcancel()
		for range ch {
		}
		cancel()
	}
	proxy.Restore()
	ctx := ctxFor(t, 30*time.Second)
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatalf("the view differs from the server:\n%s", d)
	}
}

// TestListenersComeAndGo: while a writer changes the tree and the client
// is cut off and reconnects, listeners start and stop all the time; each
// one's events, replayed onto its Resync, give the view at the end (for
// those still listening) — no event lost or doubled at a Listen.
func TestListenersComeAndGo(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	wr := newWriter(t, conn, root, 100, 10*time.Millisecond)
	wr.fill(t)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	c := newCache(t, client, root)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	wr.start()
	defer wr.finish(t)
	var mu sync.Mutex
	var keep []*recorder
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i == 3*g {
					r := record(t, c, cache.WithBuffer(8+g*100))
					mu.Lock()
					keep = append(keep, r)
					mu.Unlock()
					continue
				}
				lctx, cancel := context.WithCancel(context.Background())
				ch, err := c.Listen(lctx)
				if err != nil {
					cancel()
					t.Error(err)
					return
				}
				for range g {
					<-ch
				}
				cancel()
				for range ch {
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	proxy.Cut()
	time.Sleep(500 * time.Millisecond)
	proxy.Restore()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	wr.pause()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatalf("the view differs from the server:\n%s", d)
	}
	snap := c.Snapshot()
	for i, r := range keep {
		zktest.Eventually(t, 10*time.Second, fmt.Sprintf("listener %d replays to the view", i), func() error {
			if d := diffReplay(replay(r.all()), snap); d != "" {
				return errors.New(d)
			}
			return nil
		})
	}
	t.Logf("%d listeners kept, %d nodes", len(keep), snap.Len())
	wr.resume()
}

// spuriousDeletes returns the Deleted events of nodes (path and czxid)
// that exist in the server's tree want.
func spuriousDeletes(evs []cache.Event, want map[string]tnode) []string {
	var bad []string
	for i, ev := range evs {
		if n, ok := want[ev.Path]; ok && ev.Type == cache.Deleted && n.stat.Czxid == ev.Node.Stat.Czxid {
			bad = append(bad, fmt.Sprintf("#%d Deleted %s (czxid %d), which exists", i, ev.Path, n.stat.Czxid))
		}
	}
	return bad
}

// detail lists events one a line, with czxid and version, paths relative
// to base.
func detail(evs []cache.Event, base string) string {
	var b strings.Builder
	for i, ev := range evs {
		fmt.Fprintf(&b, "#%d %v %s", i, ev.Type, strings.TrimPrefix(ev.Path, base))
		if ev.Path != "" {
			fmt.Fprintf(&b, " czxid %d v%d %q", ev.Node.Stat.Czxid, ev.Node.Stat.Version, ev.Node.Data)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestSyncAcrossExpiry: Sync called while the client is cut off beyond
// its session, after nodes were set, returns once the view of the new
// session holds them.
func TestSyncAcrossExpiry(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	const nodes = 20
	for i := range nodes {
		mustCreate(t, conn, fmt.Sprintf("%s/n%d", root, i), []byte("v0"))
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	c := newCache(t, client, root)
	ctx := ctxFor(t, time.Minute)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := client.Session().ID()
	proxy.Blackhole()
	<-done
	for i := range nodes {
		if _, err := conn.Set(fmt.Sprintf("%s/n%d", root, i), []byte("v1"), -1); err != nil {
			t.Fatal(err)
		}
	}
	res := make(chan []string, 1)
	go func() {
		if err := c.Sync(ctx); err != nil {
			t.Error(err)
		}
		snap := c.Snapshot()
		var stale []string
		for i := range nodes {
			p := fmt.Sprintf("%s/n%d", root, i)
			if n, ok := snap.Get(p); !ok || n.Stat.Version != 1 {
				stale = append(stale, p)
			}
		}
		res <- stale
	}()
	time.Sleep(3500 * time.Millisecond)
	proxy.Restore()
	stale := <-res
	if client.Session().ID() == sid {
		t.Fatal("the same session: not the case under test")
	}
	if len(stale) > 0 {
		t.Fatalf("Sync returned with %d of %d sets missing (first %s)", len(stale), nodes, stale[0])
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
			zktest.Eventually(t, 10*time.Second, when+": replay", func() error {
				if d := diffReplay(replay(sc.rec.all()), sc.c.Snapshot()); d != "" {
					return errors.New(d)
				}
				return nil
			})
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
