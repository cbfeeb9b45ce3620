package connection_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestReadWatchManyReconnectWithAuth: a client with credentials holds
// watches set in bulk; its connection is cut and restored. After the
// reconnect go-zookeeper sends its credentials again, and ZooKeeper
// answers an auth packet at once (ZooKeeperServer.processPacket), ahead
// of the setWatches the tracker wrote before it, which goes through the
// request pipeline. The tracker matches replies to requests by counting:
// the auth reply takes the injected setWatches' slot, and the setWatches
// reply then finds go-zookeeper's request at the head and drops the
// connection — on every reconnect. The connection must settle: one
// Suspended/Reconnected, then quiet, and the watches still fire.
func TestReadWatchManyReconnectWithAuth(t *testing.T) {
	t.Parallel()
	reconnectBulkWatches(t, connection.WithDigestAuth("bob", "pw"))
}

// TestReadWatchManyReconnectDelayed is the control of
// TestReadWatchManyReconnectWithAuth: the same without credentials.
func TestReadWatchManyReconnectDelayed(t *testing.T) {
	t.Parallel()
	reconnectBulkWatches(t)
}

func reconnectBulkWatches(t *testing.T, opts ...connection.Option) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), append(opts, connection.WithSessionTimeout(8*time.Second))...)
	states := c.Listen(ctxFor(t, 2*time.Minute))
	ctx := ctxFor(t, time.Minute)
	paths := bulkTree(t, conn, root, 4, 1000)
	res, err := c.ReadWatchMany(ctx, bulkReads(paths))
	if err != nil {
		t.Fatal(err)
	}
	sess := c.Session()
	p.Cut()
	expect(t, states, 10*time.Second, connection.Suspended)
	p.Restore()
	p.Delay(20 * time.Millisecond) // the setWatches and the auth reach the server together
	expect(t, states, 10*time.Second, connection.Reconnected)
	// Quiet for a while: no further drop.
	quiet := time.After(3 * time.Second)
	drops := 0
loop:
	for {
		select {
		case s := <-states:
			if s == connection.Suspended {
				drops++
			}
		case <-quiet:
			break loop
		}
	}
	if drops > 0 {
		t.Fatalf("the connection dropped %d more times after the reconnect", drops)
	}
	if c.Session() != sess {
		t.Fatal("a new session")
	}
	if _, err := conn.Set(paths[3], []byte("after"), -1); err != nil {
		t.Fatal(err)
	}
	fires(t, res[3].DataWatch, paths[3])
	if _, _, err := c.Get(ctx, paths[3]); err != nil {
		t.Fatal(err)
	}
}
