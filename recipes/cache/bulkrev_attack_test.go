package cache_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestBulkLoadReconnectWithAuth: a cache loaded in bulk by a client with
// credentials; the connection is cut once after the load and restored
// (the link 20 ms each way, as a LAN hop under load). After the
// reconnect, go-zookeeper's auth reply overtakes the client's own
// setWatches and the tracker drops the connection, again on every
// reconnect (connection.TestReadWatchManyReconnectWithAuth): the cache
// must still settle and equal the server's tree.
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
