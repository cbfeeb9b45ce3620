package connection_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestReconnectFiresExactlyTheChangedWatches: go-zookeeper's setWatches
// carries the tracker's goodZxid (go-zookeeper's own zxid is always 0), own
// watches (ReadWatchMany) their own. Sixty nodes watched, half by
// go-zookeeper's reads, half as own watches; other nodes change, and pings
// are answered, between the reads and the cut; during a cut within the
// session, some watched nodes change or go. After the reconnect exactly
// those watches fire: none missed, and no flood of the others (a
// setWatches zxid of 0 would fire them all). Three rounds, each on the
// watches the last left.
func TestReconnectFiresExactlyTheChangedWatches(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(3*time.Second))
	ctx := ctxFor(t, time.Minute)
	const n = 60
	name := func(i int) string { return fmt.Sprintf("%s/n%02d", root, i) }
	for i := range n {
		if _, err := obs.Create(name(i), []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := obs.Create(root+"/other", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	watches := make([]*connection.Watch, n)
	alive := make([]bool, n)
	for i := range n {
		alive[i] = true
	}
	watchAll := func() {
		var bulk []connx.BulkRead
		var at []int
		for i := range n {
			if !alive[i] || (watches[i] != nil && !closed(watches[i].Done())) {
				continue
			}
			if i < n/2 {
				_, _, w, err := c.GetWatch(ctx, name(i))
				if err != nil {
					t.Fatal(err)
				}
				watches[i] = w
			} else {
				bulk = append(bulk, connx.BulkRead{Path: name(i)})
				at = append(at, i)
			}
		}
		if len(bulk) > 0 {
			res, err := connx.Of(c).ReadWatchMany(ctx, bulk)
			if err != nil {
				t.Fatal(err)
			}
			for k, r := range res {
				if r.Err != nil || r.DataWatch == nil {
					t.Fatalf("bulk read of %s: %v", bulk[k].Path, r.Err)
				}
				watches[at[k]] = r.DataWatch
			}
		}
	}
	sess := c.Session()
	states := c.Listen(ctx)
	for round := range 3 {
		watchAll()
		// The zxid moves on, by changes of nodes not watched, and pings
		// are answered.
		for range 5 {
			if _, err := obs.Set(root+"/other", nil, -1); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(1500 * time.Millisecond)
		p.Cut()
		var want []int
		for k := range 4 {
			for _, i := range []int{round*4 + k, n/2 + round*4 + k} {
				want = append(want, i)
				if k == 3 {
					if err := obs.Delete(name(i), -1); err != nil {
						t.Fatal(err)
					}
					alive[i] = false
				} else if _, err := obs.Set(name(i), fmt.Appendf(nil, "%d", round+1), -1); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(300 * time.Millisecond)
		p.Restore()
		for s := range states {
			if s == connection.Reconnected {
				break
			}
			if s == connection.Lost {
				t.Fatal("session lost: the test proves nothing")
			}
		}
		time.Sleep(500 * time.Millisecond) // a flood would have come by now
		slices.Sort(want)
		var fired []int
		for i, w := range watches {
			if w != nil && closed(w.Done()) {
				fired = append(fired, i)
				watches[i] = nil
			}
		}
		if !slices.Equal(fired, want) {
			t.Fatalf("round %d: watches fired %v, want exactly %v", round, fired, want)
		}
	}
	if c.Session() != sess {
		t.Fatal("the session changed: the test proves nothing")
	}
}

// TestChangesDuringALostRestoreFireOnTheNext: the reconnect's setWatches
// are written and applied, but their answers (and the notifications the
// server sends meanwhile) are lost; more watched nodes change then; the
// connection is closed and the client comes back again in the same
// session. Every watch of a node changed during either cut must fire
// (go-zookeeper's setWatches carries the tracker's goodZxid, which the
// unrestored connection must not have moved on), and no other.
func TestChangesDuringALostRestoreFireOnTheNext(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs := ens.Conn(t)
	p, err := zkserver.NewCountingProxy(ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := ctxFor(t, time.Minute)
	const n = 40
	name := func(i int) string { return fmt.Sprintf("%s/n%02d", root, i) }
	for i := range n {
		if _, err := obs.Create(name(i), []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	watches := make([]*connection.Watch, n)
	var bulk []connx.BulkRead
	for i := range n / 2 {
		_, _, w, err := c.GetWatch(ctx, name(i))
		if err != nil {
			t.Fatal(err)
		}
		watches[i] = w
		bulk = append(bulk, connx.BulkRead{Path: name(n/2 + i)})
	}
	res, err := connx.Of(c).ReadWatchMany(ctx, bulk)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range res {
		watches[n/2+k] = r.DataWatch
	}
	sess := c.Session()
	set := func(is ...int) {
		for _, i := range is {
			if _, err := obs.Set(name(i), []byte("1"), -1); err != nil {
				t.Error(err)
			}
		}
	}
	var (
		mu      sync.Mutex
		armed   bool
		dropped = make(chan struct{})
	)
	const opSetWatches = 101
	zkserver.LogWire(p, func(ev zkserver.WireEvent) {
		if !ev.ToServer || ev.Op != opSetWatches {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !armed {
			return
		}
		armed = false
		p.DropReplies()
		go func() {
			defer close(dropped)
			set(2, 3, n/2+2, n/2+3)
			time.Sleep(500 * time.Millisecond)
			p.Restore()
		}()
	})
	defer zkserver.LogWire(p, nil)
	p.Cut()
	set(0, 1, n/2, n/2+1)
	mu.Lock()
	armed = true
	mu.Unlock()
	p.Restore()
	select {
	case <-dropped:
	case <-time.After(20 * time.Second):
		t.Fatal("no setWatches written after the reconnect")
	}
	want := []int{0, 1, 2, 3, n / 2, n/2 + 1, n/2 + 2, n/2 + 3}
	zktest.Eventually(t, 15*time.Second, "the changed nodes' watches fired", func() error {
		for _, i := range want {
			if !closed(watches[i].Done()) {
				return fmt.Errorf("watch of %s not fired", name(i))
			}
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	var fired []int
	for i, w := range watches {
		if closed(w.Done()) {
			fired = append(fired, i)
		}
	}
	if !slices.Equal(fired, want) {
		t.Errorf("watches fired %v, want %v", fired, want)
	}
	if c.Session() != sess {
		t.Fatal("the session changed: the test proves nothing")
	}
}

// dropConn closes its connection when the client writes the setWatches
// frame numbered drop (from 1, counted over every connection of the
// dialer), as a server or network that drops the connection in the middle
// of the re-registration would.
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

// TestDropMidSetWatchesKeepsChangesMadeWhileCutOff: the connection drops
// when go-zookeeper writes its second setWatches frame, the first one
// answered. The next connection registers the watches again and the client
// reports Reconnected; by then every watch of a node changed during the cut
// has fired, those not in the first frame too (else a cache on this client
// would stay stale while trusted: the cache's
// TestDropMidSetWatchesKeepsCacheCurrent).
//
// The answer to the first frame moves go-zookeeper's lastZxid past the
// changes made during the cut; were the next connection's setWatches to
// carry that zxid as relativeZxid, the server would see nothing changed
// "since" for the watches it never registered on the dropped connection.
// So the tracker writes into every setWatches no zxid newer than the last
// answer read on a restored connection (goodZxid, restore.go).
func TestDropMidSetWatchesKeepsChangesMadeWhileCutOff(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	var frames atomic.Int32
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &dropConn{Conn: c, frames: &frames, drop: 2}, nil
	}
	const timeout = 9 * time.Second
	c := open(t, p.Servers(), connection.WithSessionTimeout(timeout), connection.WithDialer(dial))
	paths, ws := manyWatches(t, conn, c, root, 3000)
	states := c.Listen(ctxFor(t, time.Minute))
	sid := c.Session().ID()
	p.Cut()
	expect(t, states, 10*time.Second, connection.Suspended)
	for i := 0; i < len(paths); i += 10 {
		if _, err := conn.Set(paths[i], []byte("v1"), -1); err != nil {
			t.Fatal(err)
		}
	}
	p.Restore()
	at := time.Now()
	expect(t, states, 20*time.Second, connection.Reconnected)
	took := time.Since(at)
	if c.Session().ID() != sid {
		t.Fatal("a new session")
	}
	if n := frames.Load(); n < 3 {
		// The drop is at the second frame; the next connection writes
		// them all again.
		t.Fatalf("%d setWatches frames written: the drop did not happen as planned", n)
	}
	var pending []int
	for i := 0; i < len(paths); i += 10 {
		if !closed(ws[i].Done()) {
			pending = append(pending, i)
		}
	}
	t.Logf("Reconnected %v after the restore, %d setWatches frames written", took.Round(time.Millisecond), frames.Load())
	if len(pending) > 0 {
		time.Sleep(3 * time.Second) // and later?
		var still int
		for _, i := range pending {
			if !closed(ws[i].Done()) {
				still++
			}
		}
		t.Fatalf("Reconnected while %d of %d watches of nodes changed during the cut had not fired (e.g. node %d); 3 s later %d still had not",
			len(pending), len(paths)/10, pending[0], still)
	}
}
