package cache_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestChildRemadeAtOnce: a child deleted and made again at once, as a
// node recipe remakes a registration, over and over: the view follows,
// and the events replayed give the server's tree.
func TestChildRemadeAtOnce(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := newCache(t, open(t, ens.Servers()), root, cache.WithMaxDepth(1))
	rec := record(t, c)
	if _, err := c.Trust(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	p := root + "/a"
	for i := range 100 {
		if i == 0 {
			mustCreate(t, conn, p, []byte("0"))
		}
		if _, err := conn.Set(p, []byte(fmt.Sprint(i, "-set")), -1); err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(p, []byte(fmt.Sprint(i)), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	want := readTree(t, conn, root, 1)
	zktest.Eventually(t, 20*time.Second, "the view follows", func() error {
		if err := c.Sync(ctxFor(t, 10*time.Second)); err != nil {
			return err
		}
		if d := diff(nodesOf(c.Snapshot()), want); d != "" {
			return fmt.Errorf("view:\n%s", d)
		}
		if d := diff(replay(rec.all()), want); d != "" {
			return fmt.Errorf("replay:\n%s", d)
		}
		return nil
	})
}

// TestReplacedWhileCutOffExpired: while the client is cut off beyond its
// session, a parent is deleted and created again with other children, a
// leaf is deleted and created again and set back to the same version, and
// a new branch three levels deep comes. In the new session the view equals
// the server's tree; the events replayed onto the first Resync give it, in
// version order per path, parents' Created before children's and
// children's Deleted before parents'; no Deleted names a node that still
// exists; and the outage's events concern only the paths written. (The
// same within the session: TestReplacedParentWhileCutOffGivesOrderedEvents.)
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

// TestReplacedParentWhileCutOffGivesOrderedEvents is
// TestReplacedWhileCutOffExpired within the session (a cut of 300 ms): a
// parent deleted and created again with other children (one of them under
// an old name) while cut off. As in
// TestReplacedRootWhileCutOffGivesOrderedEvents, no new child may be
// Created under the old parent, Deleted with it although it exists, and
// Created again.
func TestReplacedParentWhileCutOffGivesOrderedEvents(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	replacedWhileCutOff(t, 300*time.Millisecond, (*zktest.Proxy).Cut, false)
}

// TestReplacedRootWhileCutOffGivesOrderedEvents: the cache's root is
// deleted with its subtree and created again with the same names while the
// client is cut off, within the session. Every node is another one now (new
// czxids): the events are Deleted for the old subtree, children first, then
// Created for the new, parents first; the view ends equal to the server's
// tree, and no Deleted names a node that exists.
//
// The risk: after the reconnect the notifications fire the data watches of
// parent and children alike, and their reads run concurrently. Were a
// child's read, coming first, published under the old parent, the parent's
// read would then replace the parent with its whole subtree, the child's
// new node included: a Deleted of a node never deleted, and a node Created
// twice (czxid not increasing). So a node made after its parent's last
// listing waits for a listing that shows it (awaitParent).
func TestReplacedRootWhileCutOffGivesOrderedEvents(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	base := ens.Root(t)
	conn := ens.Conn(t)
	root := base + "/r"
	names := []string{"", "/a", "/a/b", "/c"}
	for _, p := range names {
		mustCreate(t, conn, root+p, []byte("old"))
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	c := newCache(t, client, root)
	rec := record(t, c)
	ctx := ctxFor(t, time.Minute)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := client.Session().ID()
	proxy.Cut()
	<-done
	for _, p := range []string{"/a/b", "/a", "/c", ""} {
		if err := conn.Delete(root+p, -1); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range names {
		mustCreate(t, conn, root+p, []byte("new"))
	}
	proxy.Restore()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if client.Session().ID() != sid {
		t.Skip("a new session")
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
	if bad := spuriousDeletes(rec.all(), want); len(bad) > 0 {
		t.Errorf("Deleted of nodes that exist:\n%s", strings.Join(bad, "\n"))
	}
	if bad := checkOrder(rec.all(), root); len(bad) > 0 {
		t.Fatalf("order:\n%s\nevents:\n%s", strings.Join(bad, "\n"), detail(rec.all(), base))
	}
}

// TestParentReplacedAtOnceGivesOrderedEvents: no fault at all. A parent
// and its child are deleted and created again in one multi (new czxids,
// same names), 20 times. Each time the events are Deleted child, Deleted
// parent, Created parent, Created child, with no Deleted of a node that
// exists: the child's data watch and the parent's fire together, and the
// child's read may come first (see
// TestReplacedRootWhileCutOffGivesOrderedEvents, awaitParent).
func TestParentReplacedAtOnceGivesOrderedEvents(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p, k := root+"/p", root+"/p/k"
	mustCreate(t, conn, p, nil)
	mustCreate(t, conn, k, nil)
	c := newCache(t, open(t, ens.Servers()), root)
	rec := record(t, c)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	var bad []string
	for round := range 20 {
		mark := len(rec.all())
		acl := zk.WorldACL(zk.PermAll)
		if _, err := conn.Multi(&zk.DeleteRequest{Path: k, Version: -1}, &zk.DeleteRequest{Path: p, Version: -1},
			&zk.CreateRequest{Path: p, Acl: acl}, &zk.CreateRequest{Path: k, Acl: acl}); err != nil {
			t.Fatal(err)
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		want := readTree(t, conn, root, -1)
		zktest.Eventually(t, 10*time.Second, "the events replay to the server's tree", func() error {
			if d := diff(replay(rec.all()), want); d != "" {
				return errors.New(d)
			}
			return nil
		})
		evs := rec.all()
		if b := spuriousDeletes(evs[mark:], want); len(b) > 0 {
			bad = append(bad, fmt.Sprintf("round %d: %s\n%s", round, strings.Join(b, "; "), detail(evs[mark:], root)))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d of 20 rounds Deleted a node that exists; the first:\n%s", len(bad), bad[0])
	}
}
