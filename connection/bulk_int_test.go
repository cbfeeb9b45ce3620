package connection_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// bulkTree makes root/d0..d(dirs-1), each with kids children whose data
// is their path, in pipelined multis; it returns every path, root first.
func bulkTree(t *testing.T, conn *zk.Conn, root string, dirs, kids int) []string {
	t.Helper()
	paths := []string{root}
	var ops []any
	flush := func() {
		if len(ops) == 0 {
			return
		}
		if _, err := conn.Multi(ops...); err != nil {
			t.Fatal(err)
		}
		ops = nil
	}
	for d := range dirs {
		dir := fmt.Sprintf("%s/d%d", root, d)
		paths = append(paths, dir)
		ops = append(ops, &zk.CreateRequest{Path: dir, Data: []byte(dir), Acl: zk.WorldACL(zk.PermAll)})
		for k := range kids {
			p := fmt.Sprintf("%s/k%d", dir, k)
			paths = append(paths, p)
			ops = append(ops, &zk.CreateRequest{Path: p, Data: []byte(p), Acl: zk.WorldACL(zk.PermAll)})
			if len(ops) >= 500 {
				flush()
			}
		}
	}
	flush()
	return paths
}

// treeReads reads every path with its children, then missing.
func treeReads(paths []string, missing string) []connx.BulkRead {
	reads := make([]connx.BulkRead, 0, len(paths)+1)
	for _, p := range paths {
		reads = append(reads, connx.BulkRead{Path: p, Children: true})
	}
	return append(reads, connx.BulkRead{Path: missing, Children: true})
}

// checkReads fails t unless each of res's first results holds what conn
// reads of its path: the data, the Stat and the children.
func checkReads(t *testing.T, conn *zk.Conn, paths []string, res []connx.BulkResult) {
	t.Helper()
	for i, p := range paths {
		data, st, err := conn.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		kids, _, err := conn.Children(p)
		if err != nil {
			t.Fatal(err)
		}
		r := res[i]
		if r.Err != nil || r.ChildErr != nil || !bytes.Equal(r.Data, data) || *r.Stat != *st {
			t.Fatalf("%s: bulk %q %+v %v %v; read %q %+v", p, r.Data, r.Stat, r.Err, r.ChildErr, data, st)
		}
		slices.Sort(kids)
		slices.Sort(r.Children)
		if !slices.Equal(kids, r.Children) {
			t.Fatalf("%s: children %d, want %d", p, len(r.Children), len(kids))
		}
	}
}

// TestReadWatchMany: reads in bulk give what go-zookeeper's reads give,
// node for node, and set watches that fire for a later change of data,
// a child created, a node deleted.
func TestReadWatchMany(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	paths := bulkTree(t, conn, root, 5, 600) // 3,006 nodes: several requests
	res, err := connx.Of(c).ReadWatchMany(ctx, treeReads(paths, root+"/missing"))
	if err != nil {
		t.Fatal(err)
	}
	checkReads(t, conn, paths, res)
	for i, p := range paths {
		if r := res[i]; r.DataWatch == nil || r.ChildWatch == nil {
			t.Fatalf("%s: no watch", p)
		}
	}
	miss := res[len(paths)]
	if !errors.Is(miss.Err, zk.ErrNoNode) || !errors.Is(miss.ChildErr, zk.ErrNoNode) || miss.DataWatch != nil || miss.ChildWatch != nil {
		t.Fatalf("missing node: %+v", miss)
	}
	for _, r := range res[:len(paths)] {
		if closed(r.DataWatch.Done()) || closed(r.ChildWatch.Done()) {
			t.Fatal("a watch fired with nothing changed")
		}
	}
	// Changes: the data of d0/k1, a child of d1, d2/k2 deleted.
	at := func(p string) int { return slices.Index(paths, p) }
	if _, err := conn.Set(root+"/d0/k1", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(root+"/d1/new", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(root+"/d2/k2", -1); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*connection.Watch{
		res[at(root+"/d0/k1")].DataWatch, res[at(root+"/d1")].ChildWatch,
		res[at(root+"/d2/k2")].DataWatch, res[at(root+"/d2/k2")].ChildWatch, res[at(root+"/d2")].ChildWatch,
	} {
		select {
		case <-w.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a watch did not fire")
		}
		if w.Err() != nil {
			t.Fatal(w.Err())
		}
	}
	if ev := res[at(root+"/d0/k1")].DataWatch.Event(); ev.Type != zk.EventNodeDataChanged {
		t.Fatalf("event %v", ev.Type)
	}
	// The same watches are shared with a later GetWatch.
	_, _, w, err := c.GetWatch(ctx, root+"/d3/k3")
	if err != nil {
		t.Fatal(err)
	}
	if w != res[at(root+"/d3/k3")].DataWatch {
		t.Fatal("the bulk watch is not shared")
	}
}

// TestReadWatchManyRacingWrites: writers set and delete nodes while they
// are read in bulk. Every node changed after its read (its Stat at
// quiescence differs from the one read) has its watch fired; the server
// fires it either as the change is made or when the watch is set.
func TestReadWatchManyRacingWrites(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	paths := bulkTree(t, conn, root, 4, 500)
	reads := make([]connx.BulkRead, len(paths))
	for i, p := range paths {
		reads[i] = connx.BulkRead{Path: p, Children: true}
	}
	for round := range 5 {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; ; i += 4 {
					select {
					case <-stop:
						return
					default:
					}
					p := paths[1+(i*37+round)%(len(paths)-1)]
					if i%11 == 0 {
						conn.Create(p+"/c", nil, 0, zk.WorldACL(zk.PermAll))
					} else {
						conn.Set(p, []byte{byte(i)}, -1)
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		res, err := connx.Of(c).ReadWatchMany(ctx, reads)
		time.Sleep(20 * time.Millisecond)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		// Quiescence: a sync, then every notification is in.
		if err := c.Sync(ctx, root); err != nil {
			t.Fatal(err)
		}
		changedData, changedKids := 0, 0
		for i, p := range paths {
			_, st, err := conn.Get(p)
			if err != nil {
				t.Fatal(err)
			}
			r := res[i]
			if st.Mzxid != r.Stat.Mzxid {
				changedData++
				if !closed(r.DataWatch.Done()) {
					t.Fatalf("round %d: %s changed after its read (mzxid %d → %d) and its watch did not fire", round, p, r.Stat.Mzxid, st.Mzxid)
				}
			}
			if st.Pzxid != r.Stat.Pzxid {
				changedKids++
				if !closed(r.ChildWatch.Done()) {
					t.Fatalf("round %d: %s listed before a child changed and its watch did not fire", round, p)
				}
			}
		}
		t.Logf("round %d: %d data and %d listings changed after the read", round, changedData, changedKids)
	}
}

func bulkReads(paths []string) []connx.BulkRead {
	reads := make([]connx.BulkRead, len(paths))
	for i, p := range paths {
		reads[i] = connx.BulkRead{Path: p, Children: true}
	}
	return reads
}

func fires(t *testing.T, w *connection.Watch, what string) {
	t.Helper()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the watch did not fire", what)
	}
}

// TestReadWatchManyReconnect: the watches set in bulk are registered
// again by the client after a reconnect of the same session, before
// Reconnected: those of nodes changed while cut off have fired by then,
// the others still fire for a later change. The connection drops twice
// more during the re-registration's rounds.
func TestReadWatchManyReconnect(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(8*time.Second))
	states := c.Listen(ctxFor(t, 2*time.Minute))
	ctx := ctxFor(t, time.Minute)
	paths := bulkTree(t, conn, root, 4, 500)
	res, err := connx.Of(c).ReadWatchMany(ctx, bulkReads(paths))
	if err != nil {
		t.Fatal(err)
	}
	sess := c.Session()
	for round := range 3 {
		p.Cut()
		expect(t, states, 10*time.Second, connection.Suspended)
		k := 1 + round*7
		if _, err := conn.Set(paths[k], []byte("cut"), -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(paths[k+1]+"/c", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		p.Restore()
		expect(t, states, 10*time.Second, connection.Reconnected)
		if c.Session() != sess {
			t.Fatal("a new session")
		}
		if !closed(res[k].DataWatch.Done()) || !closed(res[k+1].ChildWatch.Done()) {
			t.Fatalf("round %d: Reconnected before the watches of nodes changed while cut off fired", round)
		}
	}
	// Every other watch is still registered on the server.
	for i := 100; i < 110; i++ {
		if closed(res[i].DataWatch.Done()) {
			t.Fatalf("%s: fired with nothing changed", paths[i])
		}
		if _, err := conn.Set(paths[i], []byte("after"), -1); err != nil {
			t.Fatal(err)
		}
		fires(t, res[i].DataWatch, paths[i])
	}
}

// TestReadWatchManyLostReply: the server's answers stop coming while a
// bulk read is in flight: the call fails with a connection loss once the
// connection is given up (or its context ends), nothing is left behind,
// and the next call, on the next connection, works.
func TestReadWatchManyLostReply(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	states := c.Listen(ctxFor(t, 2*time.Minute))
	paths := bulkTree(t, conn, root, 2, 300)
	p.DropReplies()
	_, err := connx.Of(c).ReadWatchMany(ctxFor(t, 30*time.Second), bulkReads(paths))
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("err %v, want a connection loss", err)
	}
	expect(t, states, 10*time.Second, connection.Suspended)
	p.Restore()
	expect(t, states, 10*time.Second, connection.Reconnected)
	res, err := connx.Of(c).ReadWatchMany(ctxFor(t, 30*time.Second), bulkReads(paths))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(paths[5], nil, -1); err != nil {
		t.Fatal(err)
	}
	fires(t, res[5].DataWatch, paths[5])
	// A caller that gives up: its context ends while the answer is lost.
	p.DropReplies()
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := connx.Of(c).ReadWatchMany(short, bulkReads(paths)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the context's", err)
	}
	p.Restore()
}

// TestReadWatchManyUnderCuts: the connection is cut at random moments of
// bulk reads (during the reads, between them and their watches, during
// the watches). A call either fails, or every watch it returned is
// registered: after the reconnect, a change of each node fires it.
func TestReadWatchManyUnderCuts(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(8*time.Second))
	states := c.Listen(ctxFor(t, 2*time.Minute))
	paths := bulkTree(t, conn, root, 3, 700)
	ok, failed := 0, 0
	for round := range 12 {
		done := make(chan struct{})
		var res []connx.BulkResult
		var err error
		go func() {
			defer close(done)
			res, err = connx.Of(c).ReadWatchMany(ctxFor(t, time.Minute), bulkReads(paths))
		}()
		time.Sleep(time.Duration(round*10) * time.Millisecond)
		p.Cut()
		<-done
		p.Restore()
		expect(t, states, 10*time.Second, connection.Suspended, connection.Reconnected)
		if err != nil {
			failed++
			continue
		}
		ok++
		for i := 1; i < len(paths); i += 97 {
			if _, err := conn.Set(paths[i], []byte{byte(round)}, -1); err != nil {
				t.Fatal(err)
			}
			fires(t, res[i].DataWatch, paths[i])
		}
	}
	t.Logf("%d calls answered, %d failed by the cut", ok, failed)
}

// TestReadWatchManyExpiry: the session expires: the bulk watches end
// with it (ErrSessionLost), and a bulk read works in the next session.
func TestReadWatchManyExpiry(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second))
	paths := bulkTree(t, conn, root, 1, 50)
	res, err := connx.Of(c).ReadWatchMany(ctxFor(t, time.Minute), bulkReads(paths))
	if err != nil {
		t.Fatal(err)
	}
	sess := c.Session()
	p.Blackhole()
	<-sess.Done()
	p.Restore()
	fires(t, res[3].DataWatch, "expired")
	if err := res[3].DataWatch.Err(); !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("watch err %v", err)
	}
	res, err = connx.Of(c).ReadWatchMany(ctxFor(t, time.Minute), bulkReads(paths))
	if err != nil {
		t.Fatal(err)
	}
	if c.Session() == sess {
		t.Fatal("same session")
	}
	if _, err := conn.Set(paths[3], nil, -1); err != nil {
		t.Fatal(err)
	}
	fires(t, res[3].DataWatch, paths[3])
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
	res, err := connx.Of(c).ReadWatchMany(ctx, []connx.BulkRead{{Path: root, Children: true}})
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
	res, err := connx.Of(c).ReadWatchMany(ctx, bulkReads(paths))
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

// TestReadManySetsNoWatch: connx ReadMany reads what ReadWatchMany reads
// (data, Stat, children; NoNode for a missing node) and sets no watch:
// none in its results, none pending on the client, none of the session on
// the server, and a change after the read notifies nothing.
func TestReadManySetsNoWatch(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	paths := bulkTree(t, conn, root, 3, 40)
	res, err := connx.Of(c).ReadMany(ctx, treeReads(paths, root+"/missing"))
	if err != nil {
		t.Fatal(err)
	}
	checkReads(t, conn, paths, res)
	for i, p := range paths {
		if r := res[i]; r.DataWatch != nil || r.ChildWatch != nil || r.DataWatched || r.ChildWatched {
			t.Fatalf("%s: a watch in the result of a read without watches: %+v", p, r)
		}
	}
	if miss := res[len(paths)]; !errors.Is(miss.Err, zk.ErrNoNode) || !errors.Is(miss.ChildErr, zk.ErrNoNode) {
		t.Fatalf("missing node: %+v", miss)
	}
	if n := c.Stats().PendingWatches; n != 0 {
		t.Fatalf("%d watches pending on the client after reads without watches", n)
	}
	if n := testkit.ServerWatches(t, ens, c.Session().ID()); n != 0 {
		t.Fatalf("%d watched paths of the session on the server after reads without watches", n)
	}
	notes := c.Stats().Notifications
	if _, err := conn.Set(paths[1], []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().Notifications - notes; n != 0 {
		t.Fatalf("%d notifications after a change of a node read without watches", n)
	}
}
