package connection_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// watchSetTree makes root/n0..n(k-1) and returns their paths and the
// root's pzxid in c's listing of it: the zxid to set watches at. (The
// listing is c's own, as a recipe's is: the client writes no zxid into a
// setWatches newer than the last reply it heard, restore.go, so watches
// at a zxid c has not heard of yet would fire at once, spuriously.)
func watchSetTree(t *testing.T, conn *zk.Conn, c *connection.Client, root string, k int) ([]string, int64) {
	t.Helper()
	var paths []string
	for i := range k {
		p := fmt.Sprintf("%s/n%d", root, i)
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	_, st, err := c.Children(ctxFor(t, 30*time.Second), root)
	if err != nil {
		t.Fatal(err)
	}
	return paths, st.Pzxid
}

// TestWatchDataAtAZxid: watches set at the zxid of an earlier listing
// miss nothing since. A node deleted since fires NodeDeleted, one whose
// data changed since fires NodeDataChanged, both before WatchData returns
// and in the order of the paths; the others are registered and fire at
// their next change; a node changed at or before the zxid does not fire.
func TestWatchDataAtAZxid(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	paths, _ := watchSetTree(t, conn, c, root, 6)
	// Written before the listing's zxid: not a change since.
	if _, err := conn.Set(paths[0], []byte("old"), -1); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Children(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	// The pzxid moves with children only: take the zxid of the write.
	_, st0, err := c.Get(ctx, paths[0])
	if err != nil {
		t.Fatal(err)
	}
	rel := max(st.Pzxid, st0.Mzxid)
	// Changes after it: n3 deleted, n1 written, n5 deleted.
	if err := conn.Delete(paths[3], -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(paths[1], []byte("new"), -1); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(paths[5], -1); err != nil {
		t.Fatal(err)
	}
	want := []string{paths[5], paths[3], paths[1]} // the order WatchData is given them
	ws, err := connx.Of(c).WatchData(ctx, c.Session(), rel, append(slices.Clone(want), paths[0], paths[2], paths[4]))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 6 {
		t.Fatalf("%d watches for 6 paths", len(ws))
	}
	for i, w := range ws[:3] {
		if !closed(w.Done()) {
			t.Fatalf("%s changed after the zxid: its watch had not fired when WatchData returned", want[i])
		}
	}
	if got := []zk.EventType{ws[0].Event().Type, ws[1].Event().Type, ws[2].Event().Type}; !slices.Equal(got,
		[]zk.EventType{zk.EventNodeDeleted, zk.EventNodeDeleted, zk.EventNodeDataChanged}) {
		t.Fatalf("events %v, want deleted, deleted, data changed", got)
	}
	for i, w := range ws[3:] {
		if closed(w.Done()) {
			t.Fatalf("%s: fired with nothing changed since the zxid (%v)", []string{paths[0], paths[2], paths[4]}[i], w.Event())
		}
	}
	if err := conn.Delete(paths[2], -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(paths[4], nil, -1); err != nil {
		t.Fatal(err)
	}
	fires(t, ws[4], paths[2])
	fires(t, ws[5], paths[4])
	if ws[4].Event().Type != zk.EventNodeDeleted || ws[5].Event().Type != zk.EventNodeDataChanged {
		t.Fatalf("events %v %v", ws[4].Event(), ws[5].Event())
	}
	if closed(ws[3].Done()) {
		t.Fatalf("%s fired with nothing changed", paths[0])
	}
}

// TestWatchDataEventsInPathOrder: the events a WatchData fires at once
// come in the order of its paths, whatever the order of the deletions —
// a recipe puts its own node first so that a deletion of it is heard
// before any other the same request reports (the client fires Watches in
// the order it reads events). Each round deletes the nodes in another
// order; the notifications are read off the client's connection.
func TestWatchDataEventsInPathOrder(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	var (
		mu    sync.Mutex
		heard []string // paths of the notifications the client read, in order
	)
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		nc, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &notificationReader{Conn: nc, heard: func(p string) {
			mu.Lock()
			heard = append(heard, p)
			mu.Unlock()
		}}, nil
	}
	c := open(t, ens.Servers(), connection.WithDialer(dial))
	ctx := ctxFor(t, time.Minute)
	for round := range 4 {
		dir := fmt.Sprintf("%s/r%d", root, round)
		if _, err := conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		paths, rel := watchSetTree(t, conn, c, dir, 4)
		del := slices.Clone(paths)
		slices.Reverse(del)
		if round%2 == 1 {
			del[0], del[2] = del[2], del[0]
		}
		for _, p := range del {
			if err := conn.Delete(p, -1); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		heard = nil
		mu.Unlock()
		ws, err := connx.Of(c).WatchData(ctx, c.Session(), rel, paths)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range ws {
			if !closed(w.Done()) || w.Event().Type != zk.EventNodeDeleted {
				t.Fatalf("round %d: %s, deleted, has not fired NodeDeleted", round, paths[i])
			}
		}
		mu.Lock()
		got := slices.Clone(heard)
		mu.Unlock()
		if !slices.Equal(got, paths) {
			t.Fatalf("round %d: deleted in the order %v, notifications in the order %v, want %v", round, del, got, paths)
		}
	}
}

// notificationReader passes a connection through and tells heard the
// path of each watch notification it reads, in order.
type notificationReader struct {
	net.Conn
	heard  func(path string)
	buf    []byte
	frames int
}

func (r *notificationReader) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	r.buf = append(r.buf, b[:n]...)
	for len(r.buf) >= 4 {
		l := int(binary.BigEndian.Uint32(r.buf))
		if len(r.buf) < 4+l {
			break
		}
		f := r.buf[4 : 4+l]
		r.frames++
		// After the handshake: [xid][zxid int64][err]; a notification
		// (xid -1) then has [type][state][path].
		if r.frames > 1 && l >= 28 && int32(binary.BigEndian.Uint32(f)) == -1 {
			pl := int(binary.BigEndian.Uint32(f[24:]))
			if 28+pl <= l {
				r.heard(string(f[28 : 28+pl]))
			}
		}
		r.buf = r.buf[4+l:]
	}
	return n, err
}

// TestWatchDataReconnect: watches set with WatchData are registered
// again after a reconnect of the session, before Reconnected: those of
// nodes deleted or written while the client was cut off have fired by
// then, the others still fire at a later change.
func TestWatchDataReconnect(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(8*time.Second))
	states := c.Listen(ctxFor(t, 2*time.Minute))
	ctx := ctxFor(t, time.Minute)
	paths, rel := watchSetTree(t, conn, c, root, 8)
	sess := c.Session()
	ws, err := connx.Of(c).WatchData(ctx, sess, rel, paths)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		p.Cut()
		expect(t, states, 10*time.Second, connection.Suspended)
		del, set := paths[2*round], paths[2*round+1]
		if err := conn.Delete(del, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Set(set, []byte("cut"), -1); err != nil {
			t.Fatal(err)
		}
		p.Restore()
		expect(t, states, 10*time.Second, connection.Reconnected)
		if c.Session() != sess {
			t.Fatal("a new session")
		}
		if !closed(ws[2*round].Done()) || !closed(ws[2*round+1].Done()) {
			t.Fatalf("round %d: Reconnected before the watches of nodes changed while cut off fired", round)
		}
		if ev := ws[2*round].Event(); ev.Type != zk.EventNodeDeleted {
			t.Fatalf("round %d: %s deleted while cut off: %v", round, del, ev)
		}
	}
	if closed(ws[6].Done()) || closed(ws[7].Done()) {
		t.Fatal("a watch fired with nothing changed")
	}
	if err := conn.Delete(paths[6], -1); err != nil {
		t.Fatal(err)
	}
	fires(t, ws[6], paths[6])
}

// TestWatchDataLostReply: the answer to a WatchData is lost: the call
// fails with a connection loss and returns no watch; the next one, on the
// next connection, works.
func TestWatchDataLostReply(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	states := c.Listen(ctxFor(t, 2*time.Minute))
	paths, rel := watchSetTree(t, conn, c, root, 3)
	p.DropReplies()
	ws, err := connx.Of(c).WatchData(ctxFor(t, 30*time.Second), c.Session(), rel, paths)
	if !errors.Is(err, zk.ErrConnectionClosed) || ws != nil {
		t.Fatalf("err %v (%d watches), want a connection loss and none", err, len(ws))
	}
	expect(t, states, 10*time.Second, connection.Suspended)
	p.Restore()
	expect(t, states, 10*time.Second, connection.Reconnected)
	ws, err = connx.Of(c).WatchData(ctxFor(t, 30*time.Second), c.Session(), rel, paths)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(paths[1], -1); err != nil {
		t.Fatal(err)
	}
	fires(t, ws[1], paths[1])
}

// TestWatchDataInNoOtherSession: a WatchData for a session that has ended
// fails with ErrSessionLost and sends nothing in the next one; the
// watches of the ended session end with it.
func TestWatchDataInNoOtherSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second))
	paths, rel := watchSetTree(t, conn, c, root, 2)
	sess := c.Session()
	ws, err := connx.Of(c).WatchData(ctxFor(t, 30*time.Second), sess, rel, paths)
	if err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	<-sess.Done()
	p.Restore()
	fires(t, ws[0], "expired")
	if err := ws[0].Err(); !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("watch err %v", err)
	}
	if _, err := c.WaitSession(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := connx.Of(c).WatchData(ctxFor(t, 30*time.Second), sess, rel, paths); !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("WatchData in an ended session: %v, want ErrSessionLost", err)
	}
	if c.Session() == sess {
		t.Fatal("same session")
	}
}

// TestWatchDataShares: WatchData on nodes that already have a pending
// data watch of the session — an earlier WatchData's, or GetWatch's —
// gives that watch and sets no other: called again and again (a waiter
// that gives up and queues again), it keeps one watch per node on the
// client and on the server. The shared watches still fire at the nodes'
// deletion.
func TestWatchDataShares(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	paths, rel := watchSetTree(t, conn, c, root, 3)
	_, _, byRead, err := c.GetWatch(ctx, paths[2])
	if err != nil {
		t.Fatal(err)
	}
	first, err := connx.Of(c).WatchData(ctx, c.Session(), rel, paths)
	if err != nil {
		t.Fatal(err)
	}
	if first[2] != byRead {
		t.Fatal("a node with a pending read's watch got another")
	}
	for range 20 {
		again, err := connx.Of(c).WatchData(ctx, c.Session(), rel, paths)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(again, first) {
			t.Fatal("a second WatchData of the same nodes set new watches")
		}
	}
	if n := testkit.ServerWatches(t, ens, c.Session().ID()); n != 3 {
		t.Fatalf("the server holds %d watches of the session, want 3", n)
	}
	for i, p := range paths {
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		fires(t, first[i], p)
	}
}
