package cache_test

// Tests of defects: each is named after the defect and says how it
// shows; each failed when written, and fails until its defect is fixed
// (those fixed say so).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestSyncAcrossReconnectMissesChangesMadeWhileCutOff: Sync promises that
// the view holds every change committed before the call. Called while the
// client is cut off, after a node was set, it returns nil once the
// connection is back — with the view still showing the node's old
// version.
//
// Suspected cause: the cache's sync request, issued while the connection
// is down, waits in go-zookeeper's send queue and is written on the new
// connection right after the handshake, before go-zookeeper's setWatches;
// its answer comes before the notifications of the changes made while cut
// off. syncDone answers Sync's callers whatever the connection state
// (only trust waits for a sync sent after Reconnected), so the barrier it
// builds lacks those changes.
//
// Fixed: a sync counts, for trust and for Sync's callers, only if it was
// sent after Reconnected and no loss came before its answer (syncDone).
func TestSyncAcrossReconnectMissesChangesMadeWhileCutOff(t *testing.T) {
	skipReconnectsUnderRace(t)
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
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	c := newCache(t, client, root)
	ctx := ctxFor(t, time.Minute)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := client.Session().ID()
	proxy.Cut()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("view still trusted 10 s after the cut")
	}
	for i := range nodes {
		if _, err := conn.Set(fmt.Sprintf("%s/n%d", root, i), []byte("v1"), -1); err != nil {
			t.Fatal(err)
		}
	}
	// Every set is committed: a Sync called now must see them all.
	type outcome struct {
		err   error
		stale []string
	}
	res := make(chan outcome, 1)
	go func() {
		err := c.Sync(ctx)
		snap := c.Snapshot() // the view as Sync returned it
		var stale []string
		for i := range nodes {
			p := fmt.Sprintf("%s/n%d", root, i)
			if n, ok := snap.Get(p); !ok || n.Stat.Version != 1 {
				stale = append(stale, fmt.Sprintf("%s v%d", p, n.Stat.Version))
			}
		}
		res <- outcome{err, stale}
	}()
	time.Sleep(1500 * time.Millisecond)
	proxy.Restore()
	var out outcome
	select {
	case out = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("Sync did not return within 30 s of the restore")
	}
	if s := client.Session(); s == nil || s.ID() != sid {
		t.Skip("the session changed: not the case under test")
	}
	if out.err != nil {
		t.Fatalf("Sync: %v", out.err)
	}
	if len(out.stale) > 0 {
		t.Fatalf("Sync returned nil while the view lacked %d of %d sets committed before the call (first: %s)",
			len(out.stale), nodes, out.stale[0])
	}
}

// TestTrustedWhileLackingChangesOnSlowLink: Trusted must never be
// reported while the view lacks a change committed before the connection
// came back. With a view of 1,500 nodes with long names (a data and a
// child watch each: about 800 KB of watch paths, 7 setWatches frames) and
// a link with a round trip of half a second (proxy Delay 250 ms each way)
// after a short cut, the view reports Trusted while nodes set during the
// cut still show their old version: the events up to the Trusted event,
// replayed onto the first Resync, differ from the server's tree, which
// nothing changed after the cut.
//
// Suspected cause: the connection reports Reconnected by its safety net
// (two thirds of the session timeout after the handshake) while
// go-zookeeper's setWatches frames, sent one after another, are still being
// answered; the cache's barrier sync, sent after Reconnected, is answered
// before the later frames and the notifications they bring.
//
// Fixed in the connection (TestReconnectedBeforeWatchesRestoredOnSlowLink).
func TestTrustedWhileLackingChangesOnSlowLink(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	pad := strings.Repeat("x", 200)
	const nodes = 1500
	var paths []string
	var reqs []any
	for i := range nodes {
		p := fmt.Sprintf("%s/%s%05d", root, pad, i)
		paths = append(paths, p)
		reqs = append(reqs, &zk.CreateRequest{Path: p, Data: []byte("v0"), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 200 || i == nodes-1 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(3*time.Second))
	c := newCache(t, client, root)
	rec := record(t, c)
	ctx := ctxFor(t, 2*time.Minute)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := client.Session().ID()
	mark := len(rec.all())
	proxy.Cut()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("view still trusted 10 s after the cut")
	}
	for i := 0; i < nodes; i += 10 {
		if _, err := conn.Set(paths[i], []byte("v1"), -1); err != nil {
			t.Fatal(err)
		}
	}
	want := readTree(t, conn, root, -1) // nothing changes after this
	proxy.Delay(250 * time.Millisecond)
	at := time.Now()
	u := waitFrom(t, rec, mark, "Untrusted at the cut", func(ev cache.Event) bool { return ev.Type == cache.Untrusted })
	// A session lost on this slow link (3 s, half a second a round trip,
	// a loaded machine) means a full reload of 1,500 nodes at that speed:
	// not the case under test.
	newSession := func() bool { s := client.Session(); return s != nil && s.ID() != sid }
	i := waitFromUnless(t, rec, u, "Trusted after the cut", func(ev cache.Event) bool { return ev.Type == cache.Trusted }, newSession)
	t.Logf("Trusted %v after the link came back (slow)", time.Since(at).Round(time.Millisecond))
	if s := client.Session(); s == nil || s.ID() != sid {
		t.Skip("a new session: not the case under test")
	}
	if d := diff(replay(rec.all()[:i+1]), want); d != "" {
		t.Fatalf("Trusted while the view lacked changes committed before the connection came back:\n%s",
			strings.ReplaceAll(d, pad, "x…x"))
	}
	proxy.Restore()
}

// waitFrom waits until an event at index from or later satisfies f, and
// returns its index.
func waitFrom(t testing.TB, r *recorder, from int, what string, f func(cache.Event) bool) int {
	t.Helper()
	return waitFromUnless(t, r, from, what, f, nil)
}

// waitFromUnless is waitFrom that skips the test once skip (if not nil)
// reports true while it waits.
func waitFromUnless(t testing.TB, r *recorder, from int, what string, f func(cache.Event) bool, skip func() bool) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if skip != nil && skip() {
			t.Skipf("waiting for %s: not the case under test", what)
		}
		evs := r.all()
		for i := from; i < len(evs); i++ {
			if f(evs[i]) {
				return i
			}
		}
		from = max(from, len(evs))
		select {
		case <-r.wake:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no event %s within 30 s; %d events, the last since index %d: %v", what, len(evs), from, summary(evs[max(from, len(evs)-40):]))
		}
	}
}

// dropConn closes its connection when the client writes the setWatches
// frame (opcode 101) numbered drop, from 1, counted over every connection
// of the dialer: a connection that drops in the middle of go-zookeeper's
// re-registration of the watches.
type dropConn struct {
	net.Conn
	frames *atomic.Int32
	drop   int32
}

func (c *dropConn) Write(b []byte) (int, error) {
	if len(b) >= 12 && binary.BigEndian.Uint32(b[8:12]) == 101 && c.frames.Add(1) == c.drop {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

// TestDropMidSetWatchesLeavesCacheStale: a view of 1,500 nodes with long
// names (7 setWatches frames); the client is cut off, every 10th node is
// set, and when the connection comes back it drops as go-zookeeper writes
// the second setWatches frame. The next connection succeeds, the view is
// Trusted again and Sync returns nil — yet most of the nodes set during
// the cut keep their old version in the view, for good: the server was
// asked to re-register their watches "since" a zxid past the changes
// (see connection's TestDropMidSetWatchesLosesChangesMadeWhileCutOff).
//
// Fixed with it, in the connection's tracker.
func TestDropMidSetWatchesLeavesCacheStale(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	pad := strings.Repeat("x", 200)
	const nodes = 1500
	var reqs []any
	for i := range nodes {
		reqs = append(reqs, &zk.CreateRequest{Path: fmt.Sprintf("%s/%s%05d", root, pad, i), Data: []byte("v0"), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 200 || i == nodes-1 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	proxy := ens.Proxy(t)
	var frames atomic.Int32
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &dropConn{Conn: c, frames: &frames, drop: 2}, nil
	}
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second), connection.WithDialer(dial))
	c := newCache(t, client, root)
	ctx := ctxFor(t, 2*time.Minute)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := client.Session().ID()
	proxy.Cut()
	<-done
	for i := 0; i < nodes; i += 10 {
		if _, err := conn.Set(fmt.Sprintf("%s/%s%05d", root, pad, i), []byte("v1"), -1); err != nil {
			t.Fatal(err)
		}
	}
	proxy.Restore()
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if client.Session().ID() != sid {
		t.Skip("a new session: not the case under test")
	}
	if frames.Load() < 3 {
		t.Fatalf("%d setWatches frames written: the drop did not happen as planned", frames.Load())
	}
	time.Sleep(2 * time.Second) // time enough for any late notification
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatalf("trusted and synced, the view lacks changes made during the cut:\n%s", strings.ReplaceAll(d, pad, "x…x"))
	}
}

// TestReplacedParentWhileCutOffGivesSpuriousEvents is
// TestReplacedWhileCutOffExpired within the session (a cut of 300 ms): a
// parent deleted and created again with other children (one of them under
// an old name) while cut off. It fails as
// TestReplacedRootWhileCutOffGivesSpuriousEvents does: a new child Created
// under the old parent, Deleted with it although it exists, Created again.
func TestReplacedParentWhileCutOffGivesSpuriousEvents(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	replacedWhileCutOff(t, 300*time.Millisecond, (*zktest.Proxy).Cut, false)
}

// TestReplacedRootWhileCutOffGivesSpuriousEvents: the cache's root is
// deleted with its subtree and created again with the same names while
// the client is cut off, within the session. Every node is another one now
// (new czxids): the events should be Deleted for the old subtree,
// children first, then Created for the new, parents first. The view ends
// equal to the server's tree, but on the way a new child is often Created
// under its old parent (a parent the server had deleted), then Deleted
// with that parent although it exists, then Created again: a Deleted of a
// node never deleted, and a node Created twice (czxid not increasing).
//
// Suspected cause: after the reconnect the notifications fire the data
// watches of parent and children alike, and their reads run concurrently;
// when a child's read comes first its new czxid makes it Deleted and
// Created (publish sees the old parent still published), and then the
// parent's read replaces the parent with its whole subtree, the child's
// new node included (unpublishTree, dropKids). The view briefly holds a
// parent that no longer exists with a child created after its deletion.
func TestReplacedRootWhileCutOffGivesSpuriousEvents(t *testing.T) {
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

// TestParentReplacedAtOnceGivesSpuriousEvents: no fault at all. A parent
// and its child are deleted and created again in one multi (new czxids,
// same names), 20 times. Each time the events should be Deleted child,
// Deleted parent, Created parent, Created child; the child's new node is
// sometimes Created under the old parent first, then Deleted with it
// although it exists, then Created again (see
// TestReplacedRootWhileCutOffGivesSpuriousEvents for the suspected cause:
// the child's data watch and the parent's fire together, and the child's
// read comes first).
//
// Fixed, with the two tests above: a node made after its parent's last
// listing waits for a listing that shows it (awaitParent).
func TestParentReplacedAtOnceGivesSpuriousEvents(t *testing.T) {
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

// skipReconnectsUnderRace skips a test whose reconnects make the race
// detector report go-zookeeper's own race: go-zookeeper v1.0.4 reads its
// last zxid unsynchronised while it registers the watches again on a
// reconnect (go-zookeeper/zk#35, open). make test runs these tests without
// -race, with the oldest supported Go.
func skipReconnectsUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("go-zookeeper/zk#35: its reconnects race inside go-zookeeper under -race")
	}
}
