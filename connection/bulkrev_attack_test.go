package connection_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
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

// TestReadWatchManyRacingReconnectWithAuth: bulk reads of a node only the
// client's credentials may read, issued over and over while the
// connection is cut and restored. go-zookeeper sends nothing on a new
// connection before its credentials are accepted again (its send loop
// waits for resendZkAuth), but the tracker writes an injected request as
// soon as the handshake is answered: a multiRead written in that window
// runs without the credentials, and its answer is NoAuth for a node the
// client may read. And ZooKeeper answers the auth packet ahead of the
// multiRead: the auth reply takes the multiRead's slot in the tracker's
// count, the multiRead's caller is never answered (reply discards what
// popSent returns; failInjected no longer sees it) and waits until its
// context ends. Every call must either fail with a connection error or
// read the node, and return well before its context ends.
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
				res, err := c.ReadWatchMany(cctx, []connection.BulkRead{{Path: secret, Children: true}})
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
	res, err := c.ReadWatchMany(ctx, []connection.BulkRead{
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

// TestReadWatchManyTooLarge: a multiRead whose answer exceeds the
// client's bound fails with ErrResponseTooLarge; the connection stays up
// (go-zookeeper never sees the frame) and answers the next request.
func TestReadWatchManyTooLarge(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	var paths []string
	for i := range 20 {
		p := fmt.Sprintf("%s/n%d", root, i)
		if _, err := conn.Create(p, make([]byte, 4<<10), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c := open(t, ens.Servers(), connection.WithMaxBufferSize(32<<10))
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	for range 3 {
		_, err := c.ReadWatchMany(ctx, bulkReads(paths))
		if !errors.Is(err, connection.ErrResponseTooLarge) {
			t.Fatalf("err %v, want ErrResponseTooLarge", err)
		}
		if _, _, err := c.Get(ctx, paths[0]); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.ReadWatchMany(ctx, bulkReads(paths[:3]))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-states:
		t.Fatalf("state %v: the connection dropped", s)
	default:
	}
	if _, err := conn.Set(paths[1], nil, -1); err != nil {
		t.Fatal(err)
	}
	fires(t, res[1].DataWatch, paths[1])
}

// TestReadWatchManyInterleaved: large bulk replies (split over many
// socket reads) interleaved with go-zookeeper's replies and with
// notifications of a writer's changes: the stream go-zookeeper sees stays
// whole (no drop) and every read, bulk or not, gives a node's data whole.
//
// It runs on a server of its own, at a pace a loaded machine keeps up
// with (64 KiB nodes, a write every 20 ms for 5 s: about 16 MB of
// transactions, where 150 KiB every 5 ms for 8 s wrote about 240 MB).
func TestReadWatchManyInterleaved(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	const nodeSize = 64 << 10 // 12 nodes: a bulk reply of 768 KiB, read in many pieces
	var paths []string
	for i := range 12 {
		p := fmt.Sprintf("%s/n%d", root, i)
		if _, err := conn.Create(p, bytes.Repeat([]byte{byte(i)}, nodeSize), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c := open(t, ens.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 2*time.Minute)
	states := c.Listen(ctx)
	check := func(i int, data []byte) error {
		if len(data) != nodeSize || data[0] != data[len(data)-1] {
			return fmt.Errorf("%s: %d bytes, first %d last %d", paths[i], len(data), data[0], data[len(data)-1])
		}
		return nil
	}
	stop := make(chan struct{})
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	run := func(f func(k int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := f(k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for g := range 3 {
		run(func(k int) error {
			i := (k*7 + g) % len(paths)
			data, _, err := c.Get(ctx, paths[i])
			if err != nil {
				return err
			}
			return check(i, data)
		})
	}
	for range 2 {
		run(func(int) error {
			res, err := c.ReadWatchMany(ctx, bulkReads(paths))
			if err != nil {
				return err
			}
			for i, r := range res {
				if r.Err != nil {
					return r.Err
				}
				if err := check(i, r.Data); err != nil {
					return err
				}
			}
			return nil
		})
	}
	run(func(k int) error {
		i := k % len(paths)
		_, err := conn.Set(paths[i], bytes.Repeat([]byte{byte(k)}, nodeSize), -1)
		time.Sleep(20 * time.Millisecond)
		return err
	})
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case s := <-states:
		t.Fatalf("state %v: the connection dropped", s)
	default:
	}
}

// TestReadWatchManyWatchesEndWithClose: the client closes while watches
// set in bulk are pending: they end, as a watch set by GetWatch does
// (go-zookeeper does not know them, so no EventNotWatching of its own
// comes for them).
func TestReadWatchManyWatchesEndWithClose(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	if _, err := conn.Create(root+"/a", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	res, err := c.ReadWatchMany(ctx, []connection.BulkRead{{Path: root, Children: true}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, gw, err := c.GetWatch(ctx, root+"/a")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	fires(t, gw, "GetWatch's watch at close")
	fires(t, res[0].DataWatch, "bulk data watch at close")
	fires(t, res[0].ChildWatch, "bulk child watch at close")
}

// TestReadWatchManyReRegistrationCut: watches set in bulk on nodes with
// long names, so that the client's re-registration after a reconnect
// takes several setWatches frames; the link is slow (30 ms each way) and
// cut again while those frames are in flight, with nodes changed during
// each cut. At Reconnected every watch of a changed node has fired; the
// others fire for a later change.
func TestReadWatchManyReRegistrationCut(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	long := string(bytes.Repeat([]byte("x"), 180))
	var paths []string
	var ops []any
	for i := range 1200 {
		path := fmt.Sprintf("%s/%s-%d", root, long, i)
		paths = append(paths, path)
		ops = append(ops, &zk.CreateRequest{Path: path, Acl: zk.WorldACL(zk.PermAll)})
		if len(ops) == 300 {
			if _, err := conn.Multi(ops...); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	states := c.Listen(ctxFor(t, 2*time.Minute))
	ctx := ctxFor(t, time.Minute)
	res, err := c.ReadWatchMany(ctx, bulkReads(paths))
	if err != nil {
		t.Fatal(err)
	}
	var changed []int
	change := func(i int) {
		if _, err := conn.Set(paths[i], []byte("cut"), -1); err != nil {
			t.Fatal(err)
		}
		changed = append(changed, i)
	}
	for round := range 3 {
		p.Cut()
		expect(t, states, 10*time.Second, connection.Suspended)
		change(round*13 + 1)
		p.Restore()
		p.Delay(30 * time.Millisecond)
		time.Sleep(time.Duration(40+round*30) * time.Millisecond) // the handshake, the first frames
		p.Cut()
		change(round*13 + 2)
		time.Sleep(50 * time.Millisecond)
		p.Restore()
		p.Delay(30 * time.Millisecond)
		for up := false; !up; {
			select {
			case s := <-states:
				up = s == connection.Reconnected
			case <-time.After(15 * time.Second):
				t.Fatalf("round %d: not Reconnected", round)
			}
		}
		for _, i := range changed {
			if !closed(res[i].DataWatch.Done()) {
				t.Fatalf("round %d: Reconnected before the watch of %d (changed while cut off) fired", round, i)
			}
		}
	}
	p.Delay(0)
	for i := 500; i < 505; i++ {
		if closed(res[i].DataWatch.Done()) {
			t.Fatalf("%d fired with nothing changed", i)
		}
		if _, err := conn.Set(paths[i], []byte("after"), -1); err != nil {
			t.Fatal(err)
		}
		fires(t, res[i].DataWatch, paths[i])
	}
}
