package connection_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// TestReadWatchManyReconnectWithAuth: a client with credentials holds
// watches set in bulk; its connection is cut and restored. After the
// reconnect go-zookeeper sends its credentials again, and ZooKeeper answers
// an auth packet at once (ZooKeeperServer.processPacket), ahead of a
// setWatches the tracker wrote before it, which goes through the request
// pipeline; replies are matched by xid (TestInjectedAnsweredOutOfOrder),
// so the out-of-order auth reply drops nothing. The connection settles:
// one Suspended/Reconnected, then quiet, and the watches still fire.
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
	res, err := connx.Of(c).ReadWatchMany(ctx, bulkReads(paths))
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

// TestReadWatchManyRacingReconnectWithAuth: bulk reads of a node only the
// client's credentials may read, issued over and over while the
// connection is cut and restored. Every call either fails with a
// connection error or reads the node, and returns well before its context
// ends. Two things are at risk on a new connection: go-zookeeper sends
// nothing before its credentials are accepted again (its send loop waits
// for resendZkAuth), and a multiRead written before them would run
// without them (NoAuth for a node the client may read), so the tracker
// writes no injected request until they are; and ZooKeeper answers the
// auth packet ahead of a multiRead written earlier, so the multiRead's
// reply must be matched by its xid, not by its place in the count.
func TestReadWatchManyRacingReconnectWithAuth(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	secret := root + "/secret"
	c := open(t, p.Servers(), connection.WithSessionTimeout(8*time.Second), connection.WithDigestAuth("bob", "pw"),
		connection.WithACLProvider(connection.PathACL(zk.WorldACL(zk.PermAll), map[string][]zk.ACL{secret: zk.DigestACL(zk.PermAll, "bob", "pw")})))
	ctx := ctxFor(t, 2*time.Minute)
	if _, err := c.Create(ctx, secret, []byte("x"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctx)
	var (
		mu                      sync.Mutex
		noAuth, hung, ok, lossN int
		stop                    = make(chan struct{})
		wg                      sync.WaitGroup
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
				res, err := connx.Of(c).ReadWatchMany(cctx, []connx.BulkRead{{Path: secret, Children: true}})
				cancel()
				mu.Lock()
				switch {
				case errors.Is(err, context.DeadlineExceeded):
					hung++
				case err != nil:
					lossN++
				case res[0].Err != nil:
					if errors.Is(res[0].Err, zk.ErrNoAuth) {
						noAuth++
					}
				default:
					ok++
				}
				mu.Unlock()
				if err != nil {
					runtime.Gosched()
				}
			}
		}()
	}
	for range 4 {
		p.Cut()
		expect(t, states, 10*time.Second, connection.Suspended)
		p.Restore()
		// Reconnected may be followed by more drops (see
		// TestReadWatchManyReconnectWithAuth): wait for the first one.
		expect(t, states, 10*time.Second, connection.Reconnected)
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if err := c.Delete(ctxFor(t, 20*time.Second), secret, -1); err != nil {
		t.Logf("delete %s: %v", secret, err)
	}
	t.Logf("calls: %d read the node, %d NoAuth, %d connection errors, %d unanswered until their context ended", ok, noAuth, lossN, hung)
	if noAuth > 0 || hung > 0 {
		t.Fatalf("%d bulk reads of a readable node answered NoAuth, %d never answered", noAuth, hung)
	}
}

// TestReadWatchManyNoAuthInside: a node the client may not read, between
// two it may, in one multiRead: its data and listing are NoAuth, without
// watches; the others are read and watched; the same path twice is read
// twice and watched once.
func TestReadWatchManyNoAuthInside(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	secret := root + "/secret"
	owner := open(t, ens.Servers(), connection.WithDigestAuth("bob", "pw"),
		connection.WithACLProvider(connection.PathACL(zk.WorldACL(zk.PermAll), map[string][]zk.ACL{secret: zk.DigestACL(zk.PermAll, "bob", "pw")})))
	ctx := ctxFor(t, time.Minute)
	if _, err := owner.Create(ctx, secret, []byte("x"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	defer owner.Delete(ctx, secret, -1)
	for _, p := range []string{root + "/a", root + "/b"} {
		if _, err := conn.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	c := open(t, ens.Servers())
	res, err := connx.Of(c).ReadWatchMany(ctx, []connx.BulkRead{
		{Path: root + "/a", Children: true}, {Path: secret, Children: true}, {Path: root + "/b"}, {Path: root + "/a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[1].Err, zk.ErrNoAuth) || !errors.Is(res[1].ChildErr, zk.ErrNoAuth) || res[1].DataWatch != nil || res[1].ChildWatch != nil {
		t.Fatalf("secret: %+v", res[1])
	}
	for _, i := range []int{0, 2, 3} {
		if res[i].Err != nil || res[i].DataWatch == nil || res[i].Stat == nil {
			t.Fatalf("read %d: %+v", i, res[i])
		}
	}
	if res[0].DataWatch != res[3].DataWatch {
		t.Logf("the same path read twice has two watches")
	}
	if _, err := conn.Set(root+"/a", nil, -1); err != nil {
		t.Fatal(err)
	}
	fires(t, res[0].DataWatch, "a")
	fires(t, res[3].DataWatch, "a, second read")
	if _, err := conn.Set(root+"/b", nil, -1); err != nil {
		t.Fatal(err)
	}
	fires(t, res[2].DataWatch, "b")
}
