package cache_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// The first load reads in bulk (connection.ReadWatchMany). These tests
// try to break it: writes racing the load, the connection dropped at
// random moments of it, the session expiring during it. Each ends with
// the proof of faults_test.go: the view equals a fresh read of the tree,
// the events replayed onto the first Resync give the view, per-path
// order is the server's.

// settleAgainst pauses wr, waits for the cache to hold every change,
// compares it with the server's tree and the listener's events with it.
func settleAgainst(t *testing.T, c *cache.Cache, rec *recorder, wr *writer, root string, when string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	wr.pause()
	defer wr.resume()
	syncTrusted(t, ctx, c, when)
	if d := diff(nodesOf(c.Snapshot()), readTree(t, wr.conn, root, -1)); d != "" {
		t.Fatalf("%s: the cache differs from the server:\n%s", when, d)
	}
	hasEveryEvent(t, rec, c, when)
	inServerOrder(t, rec, root, when)
}

// TestBulkLoadRacingWrites: a writer changes the tree as fast as it can
// while caches load it in bulk: every change made after a node's read
// (after the zxid its watch was set at) reaches the view.
func TestBulkLoadRacingWrites(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	wr := newWriter(t, conn, root, 3000, time.Millisecond)
	wr.fill(t)
	wr.start()
	defer wr.finish(t)
	for round := range 3 {
		client := open(t, ens.Servers())
		c := newCache(t, client, root)
		rec := record(t, c)
		waitInit(t, c)
		st := client.Stats()
		time.Sleep(100 * time.Millisecond)
		settleAgainst(t, c, rec, wr, root, "racing writes")
		if st.Replies*4 > c.Stats().Reads {
			t.Fatalf("round %d: %d replies for %d reads: not read in bulk", round, st.Replies, c.Stats().Reads)
		}
		t.Logf("round %d: %d nodes, %d reads in %d replies; %d events", round, c.Snapshot().Len(), c.Stats().Reads, st.Replies, len(rec.all()))
		c.Close()
		client.Close()
	}
}

// TestBulkLoadConnectionDropped: the connection is cut at moments spread
// over the first load (during the reads in bulk, between the reads and
// their watches, during the watches), with a writer going on; the cache
// completes its load on the same session and follows the tree.
func TestBulkLoadConnectionDropped(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	wr := newWriter(t, conn, root, 3000, 5*time.Millisecond)
	wr.fill(t)
	wr.start()
	defer wr.finish(t)
	for round := range 6 {
		proxy := ens.Proxy(t)
		client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
		sess := client.Session()
		c := newCache(t, client, root)
		rec := record(t, c)
		time.Sleep(time.Duration(round*15) * time.Millisecond)
		proxy.Cut()
		time.Sleep(50 * time.Millisecond)
		proxy.Restore()
		waitInit(t, c)
		settleAgainst(t, c, rec, wr, root, "cut during the load")
		if client.Session() != sess {
			t.Fatalf("round %d: a new session", round)
		}
		t.Logf("round %d (cut at %d ms): %d nodes, %d reads", round, round*15, c.Snapshot().Len(), c.Stats().Reads)
		c.Close()
		client.Close()
		proxy.Close()
	}
}

// TestBulkLoadSessionExpires: the session expires during the first load
// (the client cut off longer than its timeout); the cache loads in the
// next session and follows the tree.
func TestBulkLoadSessionExpires(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	wr := newWriter(t, conn, root, 3000, 5*time.Millisecond)
	wr.fill(t)
	wr.start()
	defer wr.finish(t)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	sess := client.Session()
	c := newCache(t, client, root)
	rec := record(t, c)
	time.Sleep(20 * time.Millisecond)
	proxy.Blackhole()
	<-sess.Done()
	proxy.Restore()
	waitInit(t, c)
	settleAgainst(t, c, rec, wr, root, "expired during the load")
	if client.Session() == sess {
		t.Fatal("the same session")
	}
	t.Logf("%d nodes, %d reads", c.Snapshot().Len(), c.Stats().Reads)
}

// TestBulkLoadReconnectWithAuth: a cache loaded in bulk by a client with
// credentials; the connection is cut once after the load and restored (the
// link 20 ms each way, as a LAN hop under load). After the reconnect,
// go-zookeeper's auth reply overtakes the client's own setWatches, whose
// reply the tracker matches by xid
// (connection.TestReadWatchManyReconnectWithAuth): the cache settles and
// equals the server's tree.
func TestBulkLoadReconnectWithAuth(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	bulkLoadReconnect(t, connection.WithDigestAuth("bob", "pw"))
}

// TestBulkLoadReconnectDelayed is the control of
// TestBulkLoadReconnectWithAuth: the same without credentials.
func TestBulkLoadReconnectDelayed(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	bulkLoadReconnect(t)
}

func bulkLoadReconnect(t *testing.T, opts ...connection.Option) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	wr := newWriter(t, conn, root, 4000, 5*time.Millisecond)
	wr.fill(t)
	wr.start()
	defer wr.finish(t)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), append(opts, connection.WithSessionTimeout(8*time.Second))...)
	c := newCache(t, client, root)
	rec := record(t, c)
	waitInit(t, c)
	states := client.Listen(ctxFor(t, time.Minute))
	proxy.Cut()
	time.Sleep(50 * time.Millisecond)
	proxy.Restore()
	proxy.Delay(20 * time.Millisecond)
	// Reconnected within 15 s of the restore (go-zookeeper reconnects at
	// once; the re-registration is a few round trips).
	deadline := time.After(15 * time.Second)
	for up := false; !up; {
		select {
		case s := <-states:
			up = s == connection.Reconnected
		case <-deadline:
			t.Fatal("one cut, and the client is not Reconnected 15 s after the restore: the connection drops on every reconnect")
		}
	}
	settleAgainst(t, c, rec, wr, root, "after a reconnect with credentials")
}
