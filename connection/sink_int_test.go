package connection_test

import (
	"fmt"
	"math/bits"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// mapTable is a WatchTable kept in a map, as a watcher with records of
// its own keeps it in them.
type mapTable struct {
	mu sync.Mutex
	m  map[string]uint8
}

func (t *mapTable) MarkWatches(p string, kinds uint8) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]uint8{}
	}
	t.m[p] |= kinds
}

func (t *mapTable) TakeWatches(p string, kinds uint8) uint8 {
	t.mu.Lock()
	defer t.mu.Unlock()
	got := t.m[p] & kinds
	if rest := t.m[p] &^ kinds; rest != 0 {
		t.m[p] = rest
	} else {
		delete(t.m, p)
	}
	return got
}

func (t *mapTable) RangeWatches(f func(string, uint8)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, k := range t.m {
		f(p, k)
	}
}

func (t *mapTable) CountWatches() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, k := range t.m {
		n += bits.OnesCount8(k)
	}
	return n
}

func (t *mapTable) ClearWatches() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m = nil
}

// sinkKinds makes a sink of each kind: the client's table, a WatchTable.
var sinkKinds = []struct {
	name string
	new  func(c *connection.Client, f func(string, zk.Event)) connx.Sink
}{
	{"client", func(c *connection.Client, f func(string, zk.Event)) connx.Sink { return connx.Of(c).NewWatchSink(f) }},
	{"table", func(c *connection.Client, f func(string, zk.Event)) connx.Sink {
		return connx.Of(c).NewWatchSinkTable(&mapTable{}, f)
	}},
}

// forEachSinkKind runs test with each kind of sink (its index in
// sinkKinds), in parallel.
func forEachSinkKind(t *testing.T, test func(t *testing.T, kind int)) {
	for i, k := range sinkKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			test(t, i)
		})
	}
}

// sinkLog records what a WatchSink is told.
type sinkLog struct {
	mu   sync.Mutex
	evs  map[string][]zk.EventType
	wake chan struct{}
}

func newSinkLog() *sinkLog {
	return &sinkLog{evs: map[string][]zk.EventType{}, wake: make(chan struct{}, 1)}
}

func (l *sinkLog) fired(path string, ev zk.Event) {
	l.mu.Lock()
	l.evs[path] = append(l.evs[path], ev.Type)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *sinkLog) of(path string) []zk.EventType {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]zk.EventType(nil), l.evs[path]...)
}

// wait waits until path was told typ.
func (l *sinkLog) wait(t *testing.T, path string, typ zk.EventType) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, got := range l.of(path) {
			if got == typ {
				return
			}
		}
		select {
		case <-l.wake:
		case <-deadline:
			t.Fatalf("%s: no %v in %v", path, typ, l.of(path))
		}
	}
}

// TestWatchSink: a sink's reads in bulk give what the client's give, with
// their watches pending on the client (PendingWatches) and told to the
// sink, without a Watch each: a change after the reads, changes made
// while the connection was cut (told before Reconnected: the client
// registered them again), a second sink on the same nodes told too, a
// closed sink told nothing more, and the end of the session's watches
// told as EventNotWatching; a GetWatch of a node a sink watches fired by
// the same change. It runs with a sink of each kind (the client's table,
// a WatchTable), the second sink of the other kind.
func TestWatchSink(t *testing.T) {
	t.Parallel()
	forEachSinkKind(t, testWatchSink)
}

func testWatchSink(t *testing.T, kind int) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(8*time.Second))
	states := c.Listen(ctxFor(t, 2*time.Minute))
	ctx := ctxFor(t, time.Minute)
	paths := bulkTree(t, conn, root, 3, 400)
	log1, log2 := newSinkLog(), newSinkLog()
	s1 := sinkKinds[kind].new(c, log1.fired)
	defer s1.Close()
	reads := append(bulkReads(paths), connx.BulkRead{Path: root + "/missing", Children: true})
	res, err := s1.ReadWatchMany(ctx, reads)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		data, st, err := conn.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		r := res[i]
		if r.Err != nil || string(r.Data) != string(data) || *r.Stat != *st || !r.DataWatched || !r.ChildWatched || r.DataWatch != nil || r.ChildWatch != nil {
			t.Fatalf("%s: %+v", p, r)
		}
	}
	if miss := res[len(paths)]; miss.DataWatched || miss.ChildWatched {
		t.Fatalf("missing node: %+v", miss)
	}
	if n := c.Stats().PendingWatches; n != 2*len(paths) {
		t.Fatalf("PendingWatches = %d, want %d", n, 2*len(paths))
	}
	// A change after the reads.
	if _, err := conn.Set(paths[1], []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	log1.wait(t, paths[1], zk.EventNodeDataChanged)

	// Changes while cut off: told before Reconnected.
	sess := c.Session()
	for round := range 2 {
		p.Cut()
		expect(t, states, 10*time.Second, connection.Suspended)
		k := 10 + round*7
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
		if ev := log1.of(paths[k]); len(ev) != 1 || ev[0] != zk.EventNodeDataChanged {
			t.Fatalf("round %d: %s told %v at Reconnected", round, paths[k], ev)
		}
		if ev := log1.of(paths[k+1]); len(ev) != 1 || ev[0] != zk.EventNodeChildrenChanged {
			t.Fatalf("round %d: %s told %v at Reconnected", round, paths[k+1], ev)
		}
	}
	// A second sink on some of the nodes: both are told; a closed one is
	// not.
	s2 := sinkKinds[1-kind].new(c, log2.fired)
	defer s2.Close()
	if _, err := s2.ReadWatchMany(ctx, bulkReads(paths[100:110])); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(paths[100], []byte("both"), -1); err != nil {
		t.Fatal(err)
	}
	log1.wait(t, paths[100], zk.EventNodeDataChanged)
	log2.wait(t, paths[100], zk.EventNodeDataChanged)
	s1.Close()
	if _, err := s1.ReadWatchMany(ctx, bulkReads(paths[:1])); err == nil {
		t.Fatal("a closed sink read")
	}
	if _, err := conn.Set(paths[101], []byte("two"), -1); err != nil {
		t.Fatal(err)
	}
	log2.wait(t, paths[101], zk.EventNodeDataChanged)
	if ev := log1.of(paths[101]); len(ev) != 0 {
		t.Fatalf("a closed sink told %v", ev)
	}
	// A GetWatch of a node the sink watches: a Watch of its own, and
	// one change fires both.
	_, _, w, err := c.GetWatch(ctx, paths[103])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(paths[103], []byte("shared"), -1); err != nil {
		t.Fatal(err)
	}
	fires(t, w, paths[103])
	log2.wait(t, paths[103], zk.EventNodeDataChanged)
	// The watches s1 left are still pending, and still fire s2's.
	if n := c.Stats().PendingWatches; n < 2*len(paths)-10 {
		t.Fatalf("PendingWatches = %d after the sink closed", n)
	}
	// The end of the session's watches.
	c.Close()
	log2.wait(t, paths[102], zk.EventNotWatching)
	if n := c.Stats().PendingWatches; n != 0 {
		t.Fatalf("PendingWatches = %d after Close", n)
	}
}

// TestWatchSinkArming: events that come while a sink's setWatches are in
// flight, from writers racing the reads, leave no watch counted pending
// that the server no longer holds: after a change of every node, every
// node was told, and nothing is pending.
func TestWatchSinkArming(t *testing.T) {
	t.Parallel()
	forEachSinkKind(t, testWatchSinkArming)
}

func testWatchSinkArming(t *testing.T, kind int) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	paths := bulkTree(t, conn, root, 2, 300)
	log := newSinkLog()
	s := sinkKinds[kind].new(c, log.fired)
	defer s.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := conn.Set(paths[1+i%(len(paths)-1)], []byte(fmt.Sprint(i)), -1); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 5 {
		if _, err := s.ReadWatchMany(ctx, bulkReads(paths)); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	for _, p := range paths {
		if _, err := conn.Set(p, []byte("end"), -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(p+"/end", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range paths {
		log.wait(t, p, zk.EventNodeDataChanged)
		log.wait(t, p, zk.EventNodeChildrenChanged)
	}
	// Every kind fired: nothing pending (the test's own session, conn, is
	// another client).
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats().PendingWatches != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("PendingWatches = %d after every node changed", c.Stats().PendingWatches)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
