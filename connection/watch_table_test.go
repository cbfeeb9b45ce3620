package connection_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestPendingWatchesAcrossExpiry: GetWatch and ChildrenWatch set
// again and again on a few nodes (as a user of the client beside a cache
// does), with a sink of each kind watching the same nodes in bulk, read
// again in each session; the session expires. Once things are still,
// PendingWatches is two per node (a data and a child watch each, however
// many watchers), as the server holds them (wchc: one data watch each).
// It runs with no sink too.
func TestPendingWatchesAcrossExpiry(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"none", "client", "table"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testPendingWatchesAcrossExpiry(t, kind)
		})
	}
}

func testPendingWatchesAcrossExpiry(t *testing.T, kind string) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	paths := []string{root}
	for i := range 5 {
		p := fmt.Sprintf("%s/n%d", root, i)
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	var s connx.Sink
	switch kind {
	case "client":
		s = connx.Of(c).NewWatchSink(func(string, zk.Event) {})
	case "table":
		s = connx.Of(c).NewWatchSinkTable(&mapTable{}, func(string, zk.Event) {})
	}
	if s != nil {
		defer s.Close()
	}
	readAll := func() {
		if s == nil {
			return
		}
		var reads []connx.BulkRead
		for _, p := range paths {
			reads = append(reads, connx.BulkRead{Path: p, Children: true})
		}
		if _, err := s.ReadWatchMany(ctxFor(t, time.Minute), reads); err != nil {
			t.Fatal(err)
		}
	}
	readAll()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	testkit.RearmWatches(ctx, &wg, c, paths)
	counts := func(when string) {
		t.Helper()
		zktest.Eventually(t, 10*time.Second, when, func() error {
			p := c.Stats().PendingWatches
			n := testkit.ServerWatches(t, ens, c.Session().ID())
			if p != 2*len(paths) || n != len(paths) {
				return fmt.Errorf("PendingWatches %d, server %d data watches; %d nodes", p, n, len(paths))
			}
			return nil
		})
	}
	counts("before the expiry")
	sess := c.Session()
	proxy.Blackhole()
	<-sess.Done()
	time.Sleep(100 * time.Millisecond)
	proxy.Restore()
	zktest.Eventually(t, 20*time.Second, "a new session", func() error {
		if cur := c.Session(); cur == nil || cur == sess {
			return fmt.Errorf("the old session")
		}
		return nil
	})
	readAll()
	counts("after the expiry")
}

// TestExistsAndDataWatchOfOneNode: on a node that exists, an
// ExistsWatch is a data watch on the server, the one a GetWatch or a
// sink's bulk read sets: wchc shows one, and so does PendingWatches. A cache leaves
// such a pair after a session's loss: its root is checked with
// ExistsWatch, then read.
func TestExistsAndDataWatchOfOneNode(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"get", "client", "table"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			root := ens.Root(t)
			c := open(t, ens.Servers())
			ctx := ctxFor(t, time.Minute)
			if _, _, _, err := c.ExistsWatch(ctx, root); err != nil {
				t.Fatal(err)
			}
			switch kind {
			case "get":
				if _, _, _, err := c.GetWatch(ctx, root); err != nil {
					t.Fatal(err)
				}
			default:
				var s connx.Sink
				if kind == "client" {
					s = connx.Of(c).NewWatchSink(func(string, zk.Event) {})
				} else {
					s = connx.Of(c).NewWatchSinkTable(&mapTable{}, func(string, zk.Event) {})
				}
				defer s.Close()
				if _, err := s.ReadWatchMany(ctx, []connx.BulkRead{{Path: root}}); err != nil {
					t.Fatal(err)
				}
			}
			n := testkit.ServerWatches(t, ens, c.Session().ID())
			if p := c.Stats().PendingWatches; p != n {
				t.Fatalf("PendingWatches %d; the server holds %d data watch(es) for the session", p, n)
			}
		})
	}
}

// TestClosedTableSinkAcrossCut: two sinks with tables watch the
// same nodes in bulk; one is closed (its watches move to the client's
// table, told to no one), then the connection is cut while every node's
// data changes (same session). The open sink is told every change, the
// closed one nothing; once they fired, PendingWatches is the child
// watches only, as on the server. A table sink and a plain sink, closed
// either way round, too.
func TestClosedTableSinkAcrossCut(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]int{{1, 1}, {0, 1}, {1, 0}} {
		t.Run(fmt.Sprintf("%s-closed-%s-open", sinkKinds[pair[0]].name, sinkKinds[pair[1]].name), func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			ens.RequireFaults(t)
			root := ens.Root(t)
			conn := ens.Conn(t)
			paths := bulkTree(t, conn, root, 3, 20)
			proxy := ens.Proxy(t)
			c := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
			ctx := ctxFor(t, time.Minute)
			closedLog, openLog := newSinkLog(), newSinkLog()
			s1 := sinkKinds[pair[0]].new(c, closedLog.fired)
			s2 := sinkKinds[pair[1]].new(c, openLog.fired)
			defer s2.Close()
			for _, s := range []connx.Sink{s1, s2} {
				if _, err := s.ReadWatchMany(ctx, bulkReads(paths)); err != nil {
					t.Fatal(err)
				}
			}
			if p := c.Stats().PendingWatches; p != 2*len(paths) {
				t.Fatalf("PendingWatches %d; %d nodes", p, len(paths))
			}
			s1.Close()
			if p := c.Stats().PendingWatches; p != 2*len(paths) {
				t.Fatalf("after a sink closed: PendingWatches %d; %d nodes", p, len(paths))
			}
			proxy.Cut()
			for _, p := range paths {
				if _, err := conn.Set(p, []byte("cut"), -1); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(100 * time.Millisecond)
			proxy.Restore()
			for _, p := range paths {
				openLog.wait(t, p, zk.EventNodeDataChanged)
			}
			for _, p := range paths {
				if evs := closedLog.of(p); len(evs) > 0 {
					t.Fatalf("the closed sink was told %v of %s", evs, p)
				}
			}
			zktest.Eventually(t, 10*time.Second, "the data watches fired", func() error {
				p := c.Stats().PendingWatches
				n := testkit.ServerWatches(t, ens, c.Session().ID())
				if p != len(paths) || n != 0 {
					return fmt.Errorf("PendingWatches %d (want %d child watches), server %d data watches (want 0)", p, len(paths), n)
				}
				return nil
			})
		})
	}
}
