package cache_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// TestNeverTrustedWhileLackingChangesOnSlowLink: Trusted is never reported
// while the view lacks a change committed before the connection came back.
// A view of 1,500 nodes with long names (a data and a child watch each:
// about 800 KB of watch paths, 7 setWatches frames), a link with a round
// trip of half a second (proxy Delay 250 ms each way), a short cut during
// which nodes are set: the events up to the Trusted event, replayed onto
// the first Resync, equal the server's tree, which nothing changed after
// the cut. The cache's barrier sync is sent after Reconnected, which the
// connection reports only once go-zookeeper's setWatches frames, sent one
// after another, are answered, not by its safety net
// (connection.TestReconnectedAfterWatchesRestoredOnSlowLink).
func TestNeverTrustedWhileLackingChangesOnSlowLink(t *testing.T) {
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

// TestDropMidSetWatchesKeepsCacheCurrent: a view of 1,500 nodes with long
// names (7 setWatches frames); the client is cut off, every 10th node is
// set, and when the connection comes back it drops as go-zookeeper writes
// the second setWatches frame. The next connection succeeds, the view is
// Trusted again and Sync returns with every node set during the cut at its
// new version: the server is never asked to re-register their watches
// "since" a zxid past the changes (connection's
// TestDropMidSetWatchesKeepsChangesMadeWhileCutOff).
func TestDropMidSetWatchesKeepsCacheCurrent(t *testing.T) {
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
