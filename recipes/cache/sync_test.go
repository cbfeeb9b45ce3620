package cache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestSyncWaitsForChangeNotifiedByBulkRead: a bulk read sets its watches
// after its data is read, so a change made in between is notified by the
// watch, not seen by the read. A Sync answered while that bulk read is in
// flight must wait for the notification's read: a change committed
// before Sync was called is in the view when it returns.
func TestSyncWaitsForChangeNotifiedByBulkRead(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	client := open(t, p.Servers())
	conn := ens.Conn(t)
	dir := root + "/d"
	mustCreate(t, conn, dir, nil)
	c := newCache(t, client, dir, cache.WithMaxDepth(1))
	waitInit(t, c)
	// Replies come late; requests reach the server at once, so the bulk
	// read's data is read at once and its watches set a delay later.
	p.DelayReplies(150 * time.Millisecond)
	ctx := ctxFor(t, 2*time.Minute)
	const rounds, kids = 5, 20
	for round := range rounds {
		var ops []any
		for i := range kids {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/r%d-c%02d", dir, round, i), Data: []byte("v1"), Acl: zk.WorldACL(zk.PermAll)})
		}
		before := c.Stats().Reads
		if _, err := conn.Multi(ops...); err != nil {
			t.Fatal(err)
		}
		// The listing shows the new children; their reads go in bulk.
		zktest.Eventually(t, 10*time.Second, "the bulk read of the new children is sent", func() error {
			if n := c.Stats().Reads - before; n < kids {
				return fmt.Errorf("%d reads since the multi", n)
			}
			return nil
		})
		first := fmt.Sprintf("%s/r%d-c00", dir, round)
		if _, err := conn.Set(first, []byte("v2"), -1); err != nil {
			t.Fatal(err)
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if n, ok := c.Get(first); !ok || string(n.Data) != "v2" {
			t.Fatalf("round %d: %s after Sync: %q (in view: %v); the set committed before Sync was called gave v2", round, first, n.Data, ok)
		}
	}
}

// trustedOfNodes makes n nodes under the ensemble's root (root/n0 …, data
// v0), a client through a proxy and a cache of the root on it; it
// returns once the cache trusts its view, with the channel that closes
// when it no longer does.
func trustedOfNodes(t *testing.T, ctx context.Context, ens *zktest.Ensemble, n int, sessionTimeout time.Duration) (root string, conn *zk.Conn, proxy *zktest.Proxy, client *connection.Client, c *cache.Cache, done <-chan struct{}) {
	t.Helper()
	root, conn = ens.Root(t), ens.Conn(t)
	for i := range n {
		mustCreate(t, conn, fmt.Sprintf("%s/n%d", root, i), []byte("v0"))
	}
	proxy = ens.Proxy(t)
	client = open(t, proxy.Servers(), connection.WithSessionTimeout(sessionTimeout))
	c = newCache(t, client, root)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return root, conn, proxy, client, c, done
}

// TestSyncAcrossExpiry: Sync called while the client is cut off beyond
// its session, after nodes were set, returns once the view of the new
// session holds them.
func TestSyncAcrossExpiry(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	const nodes = 20
	ctx := ctxFor(t, time.Minute)
	root, conn, proxy, client, c, done := trustedOfNodes(t, ctx, ens, nodes, 2*time.Second)
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

// TestSyncAcrossReconnectHasChangesMadeWhileCutOff: Sync promises that the
// view holds every change committed before the call. Called while the
// client is cut off, after a node was set, it returns once the connection
// is back with the node's new version in the view.
//
// The cache's sync request, issued while the connection is down, waits in
// go-zookeeper's send queue and is written on the new connection right
// after the handshake, before go-zookeeper's setWatches; its answer comes
// before the notifications of the changes made while cut off. So a sync
// counts, for trust and for Sync's callers, only if it was sent after
// Reconnected and no loss came before its answer (syncDone).
func TestSyncAcrossReconnectHasChangesMadeWhileCutOff(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	const nodes = 20
	ctx := ctxFor(t, time.Minute)
	root, conn, proxy, client, c, done := trustedOfNodes(t, ctx, ens, nodes, 8*time.Second)
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
