package cache_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// A replaced database whose zxids caught up with what the client heard:
// the new session's check finds nothing (its sync's zxid is not older),
// and only the data can tell. When a path's node in the new history has
// the very czxid and mzxid the view holds — a wiped ensemble given the
// same tree by the same bootstrap, in the same order, which is what a
// fresh database does: the same zxids from the same first one — its data
// differ while its Stat's zxids do not. The view must still end equal to
// the server (docs/connection.md: "In both the data go back, and a view
// finds it").

// settledEqual waits up to d for c to be trusted and, after a Sync, hold
// exactly the tree at root on the server; it returns the last difference.
func settledEqual(t *testing.T, c *cache.Cache, conn *zk.Conn, root string, maxDepth int, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	last := "not compared"
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := c.Trust(ctx)
		if err == nil {
			err = c.Sync(ctx)
		}
		cancel()
		if err != nil {
			last = err.Error()
			continue
		}
		if last = diff(nodesOf(c.Snapshot()), readTree(t, conn, root, maxDepth)); last == "" && c.Snapshot().Trusted() {
			return ""
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// TestViewFollowsWipedDatabaseRebuiltWithSameZxids: a narrow tree, read
// again one op at a time in the new session (an exists per node, then its
// listing).
func TestViewFollowsWipedDatabaseRebuiltWithSameZxids(t *testing.T) {
	rebuiltWithSameZxids(t, "/app", "/app/a", "/app/b", "/app/b/x")
}

// trustedThenWiped opens a client of ens through a proxy and a recorded
// cache of root on it, trusted; a few more zxids (through conn, which it
// then closes) reach the client's view. Then the client is cut off while
// the database is wiped, to be rebuilt by the caller (the client's
// session would otherwise be the new database's first change, and move
// every zxid after it).
func trustedThenWiped(t *testing.T, ens *zktest.Ensemble, conn *zk.Conn, root string) (*zktest.Proxy, *connection.Client, *cache.Cache, *recorder) {
	t.Helper()
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	c := newCache(t, client, root)
	rec := record(t, c)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	bump(t, conn, 5)
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	proxy.Cut()
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	return proxy, client, c, rec
}

// TestEventsFollowWipedDatabaseRebuiltWithSameZxids: a wide tree, read
// again in bulk in the new session (its data with its Stat): the listener
// must hear of every node whose data the view takes.
func TestEventsFollowWipedDatabaseRebuiltWithSameZxids(t *testing.T) {
	paths := []string{"/app"}
	for i := range 12 {
		paths = append(paths, fmt.Sprintf("/app/n%02d", i))
	}
	rebuiltWithSameZxids(t, paths...)
}

// rebuiltWithSameZxids runs a view of the tree of paths (parents first)
// through a wiped database given the same tree, with other data, at the
// same zxids; then more changes, so that the new session's check passes.
// The view, and the events replayed, must end equal to the server.
func rebuiltWithSameZxids(t *testing.T, paths ...string) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	root := paths[0]
	// The bootstrap: one session, then the tree, in one order. A fresh
	// database gives it the same zxids every time.
	bootstrap := func(data string) (*zk.Conn, map[string]tnode) {
		t.Helper()
		conn := connectNew(t, ens)
		tree(t, conn, data, paths...)
		return conn, readTree(t, conn, root, -1)
	}
	conn, before := bootstrap("old")
	proxy, client, c, rec := trustedThenWiped(t, ens, conn, root)
	conn, after := bootstrap("new")
	for p, n := range after {
		if o := before[p]; o.stat.Czxid != n.stat.Czxid || o.stat.Mzxid != n.stat.Mzxid {
			t.Fatalf("%s: czxid %#x mzxid %#x in the new database, %#x %#x before: the test wants them equal", p, n.stat.Czxid, n.stat.Mzxid, o.stat.Czxid, o.stat.Mzxid)
		}
	}
	// More changes than the old database had: the new session's check
	// passes, as the docs say it may.
	bump(t, conn, 20)
	proxy.Restore()

	d := settledEqual(t, c, conn, root, -1, 15*time.Second)
	// What a listener holds: the events replayed. It must be the view.
	told := nodeDiff(replay(rec.all()), nodesOf(c.Snapshot()))
	if d != "" || told != "" {
		hist := "no session"
		if s := client.Session(); s != nil {
			hist = fmt.Sprintf("history %d", s.History())
		}
		t.Fatalf("15 s after the wiped database was rebuilt (the client's %s), the view (trusted %v) differs from the server:\n%s\n"+
			"and the events replayed differ from the view (data taken without an event):\n%s\nevents:\n%s",
			hist, c.Snapshot().Trusted(), orNone(d), orNone(told), summary(rec.all()))
	}
}

func orNone(s string) string {
	if s == "" {
		return "  (none)"
	}
	return s
}

// nodeDiff compares what a listener holds (heard) with a view: the same
// paths, and for each the same data and Stat zxids.
func nodeDiff(heard, view map[string]cache.Node) string {
	var out []string
	for p, v := range view {
		h, ok := heard[p]
		switch {
		case !ok:
			out = append(out, "  not heard of: "+p)
		case string(h.Data) != string(v.Data) || h.Stat.Czxid != v.Stat.Czxid || h.Stat.Mzxid != v.Stat.Mzxid:
			out = append(out, fmt.Sprintf("  %s: heard %q czxid %d mzxid %d, view %q czxid %d mzxid %d",
				p, h.Data, h.Stat.Czxid, h.Stat.Mzxid, v.Data, v.Stat.Czxid, v.Stat.Mzxid))
		}
	}
	for p := range heard {
		if _, ok := view[p]; !ok {
			out = append(out, "  heard, not in the view: "+p)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestViewFollowsWipedDatabaseWhoseZxidsCaughtUp: a wiped database given
// the same paths again, the children in the other order, so that some
// come back with a higher czxid than the view's and some with a lower
// one (none equal), the root at its old czxid; then more changes than the
// old database had, so the new session's check passes. The data alone
// tell: the view ends equal to the server, in bounded reads and CPU.
func TestViewFollowsWipedDatabaseWhoseZxidsCaughtUp(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	kids := func(reverse bool) []string {
		var out []string
		for i := range 20 {
			k := i
			if reverse {
				k = 19 - i
			}
			out = append(out, fmt.Sprintf("/app/c%02d", k))
		}
		return out
	}
	conn := connectNew(t, ens)
	tree(t, conn, "root", "/app")
	tree(t, conn, "old", kids(false)...)
	before := readTree(t, conn, "/app", -1)
	proxy, client, c, rec := trustedThenWiped(t, ens, conn, "/app")
	conn = connectNew(t, ens)
	tree(t, conn, "root", "/app")
	bump(t, conn, 1)
	tree(t, conn, "new", kids(true)...)
	after := readTree(t, conn, "/app", -1)
	higher, lower := 0, 0
	for p, n := range after {
		o := before[p]
		switch {
		case p == "/app":
			if o.stat.Czxid != n.stat.Czxid {
				t.Fatalf("/app: czxid %#x, before %#x; the test wants it equal", n.stat.Czxid, o.stat.Czxid)
			}
		case n.stat.Czxid > o.stat.Czxid:
			higher++
		case n.stat.Czxid < o.stat.Czxid:
			lower++
		default:
			t.Fatalf("%s: czxid %#x in both databases; the test wants none equal", p, n.stat.Czxid)
		}
	}
	t.Logf("children back with a higher czxid: %d, a lower one: %d", higher, lower)
	bump(t, conn, 30)
	began, cpu0, reads0 := time.Now(), testkit.CPUTime(), c.Stats().Reads
	proxy.Restore()
	recovered(t, c, conn, "/app", -1, began, cpu0, reads0)
	if s := client.Session(); s.History() != 0 {
		t.Logf("the client's history: %d (the check found it)", s.History())
	}
	if d := nodeDiff(replay(rec.all()), nodesOf(c.Snapshot())); d != "" {
		t.Fatalf("the events replayed differ from the view:\n%s", d)
	}
}

// TestViewFollowsBackupRestoredAcrossAnElection: three servers restored
// from a backup taken before the leader they had last was elected. The
// restored servers elect a leader in the very epoch that election made,
// so their zxids start again from its first one: every change in the new
// history has the zxid of a change the client saw in the old, and a node
// written at the same place in both has the same czxid and mzxid, with
// other data. The client's check passes once the new history has made as
// many changes; the view must still end equal to the server.
func TestViewFollowsBackupRestoredAcrossAnElection(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	tree(t, conn, "v1", "/app", "/app/a")
	conn.Close() // no session in the backup: none expires in the new history
	time.Sleep(200 * time.Millisecond)
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	// An election after the backup: the leader killed and started again.
	l := ens.MustLeader(t)
	if err := ens.Kill(l); err != nil {
		t.Fatal(err)
	}
	conn = connectNew(t, ens) // the epoch's first change: this session
	if err := ens.Start(l); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set("/app/a", []byte("old history"), -1); err != nil {
		t.Fatal(err)
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	c := newCache(t, client, "/app")
	rec := record(t, c)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	bump(t, conn, 3)
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, conn, "/app", -1)
	conn.Close()

	proxy.Cut()
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = connectNew(t, ens) // the restored epoch's first change
	if _, err := conn.Set("/app/a", []byte("new history"), -1); err != nil {
		t.Fatal(err)
	}
	after := readTree(t, conn, "/app", -1)
	o, n := before["/app/a"].stat, after["/app/a"].stat
	t.Logf("/app/a: czxid %#x mzxid %#x before the restore, %#x %#x after", o.Czxid, o.Mzxid, n.Czxid, n.Mzxid)
	if o.Czxid != n.Czxid || o.Mzxid != n.Mzxid {
		t.Skipf("the restored servers' zxids do not meet the old ones here (another epoch): /app/a mzxid %#x, before %#x", n.Mzxid, o.Mzxid)
	}
	bump(t, conn, 10)
	proxy.Restore()
	if d := settledEqual(t, c, conn, "/app", -1, 20*time.Second); d != "" {
		hist := "no session"
		if s := client.Session(); s != nil {
			hist = fmt.Sprintf("history %d", s.History())
		}
		t.Fatalf("20 s after the restore (the client's %s), the view (trusted %v) differs from the server:\n%s\nevents:\n%s",
			hist, c.Snapshot().Trusted(), d, summary(rec.all()))
	}
}
