package watch_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestOneWatchForALargeSubtree: on a server of its own, a recursive
// watcher of a subtree of 10,000 nodes costs the server one watch (a
// cache of the same subtree, for comparison, one data and one child watch
// per node), and reports every one of a series of changes spread over the
// subtree. It logs the server's watch counts, the time to set the watch
// and to load the cache, and the lag from a write's answer to its event.
func TestOneWatchForALargeSubtree(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	ens := zktest.Start(t)
	conn := ens.Conn(t)
	const dirs, leaves = 100, 99 // 1 + 100 + 9,900 nodes
	root := "/large"
	create(t, conn, root)
	var paths []string
	for d := range dirs {
		dir := fmt.Sprintf("%s/d%03d", root, d)
		reqs := []any{&zk.CreateRequest{Path: dir, Acl: zk.WorldACL(zk.PermAll)}}
		paths = append(paths, dir)
		for l := range leaves {
			p := fmt.Sprintf("%s/l%03d", dir, l)
			reqs = append(reqs, &zk.CreateRequest{Path: p, Acl: zk.WorldACL(zk.PermAll)})
			paths = append(paths, p)
		}
		if _, err := conn.Multi(reqs...); err != nil {
			t.Fatal(err)
		}
	}
	nodes := 1 + len(paths)
	ctx := ctxFor(t, 5*time.Minute)

	wc := open(t, ens.Servers())
	start := time.Now()
	w, err := watch.New(ctx, wc, root, watch.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	setIn := time.Since(start)
	watcherWatches := testkit.ServerWatches(t, ens, wc.Session().ID())
	if watcherWatches != 1 {
		t.Fatalf("the watcher's session holds %d watches on the server, want 1", watcherWatches)
	}
	watcherCount := mntrWatchCount(t, ens) // as mntr counts it

	cc := open(t, ens.Servers())
	start = time.Now()
	view, err := cache.New(cc, root)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	select {
	case <-view.Initialized():
	case <-ctx.Done():
		t.Fatal("cache not loaded")
	}
	loadedIn := time.Since(start)
	if n := view.Snapshot().Len(); n != nodes {
		t.Fatalf("cache holds %d nodes, want %d", n, nodes)
	}
	serverTotal := 0
	zktest.Eventually(t, 30*time.Second, "the server's watches", func() error {
		serverTotal = mntrWatchCount(t, ens)
		if serverTotal != watcherCount+2*nodes {
			return fmt.Errorf("the server holds %d watches, want the watcher's %d and the cache's %d", serverTotal, watcherCount, 2*nodes)
		}
		return nil
	})

	const changes = 1000
	lags := make([]time.Duration, 0, changes)
	fromSend := make([]time.Duration, 0, changes)
	for i := range changes {
		p := paths[(i*7919)%len(paths)]
		sent := time.Now()
		if _, err := conn.Set(p, []byte{byte(i)}, -1); err != nil {
			t.Fatal(err)
		}
		answered := time.Now()
		select {
		case e := <-w.Events():
			if e != ev(watch.Changed, p) {
				t.Fatalf("change %d: event %v %s, want Changed %s", i, e.Type, e.Path, p)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("change %d of %s not reported", i, p)
		}
		lags = append(lags, time.Since(answered))
		fromSend = append(fromSend, time.Since(sent))
	}
	slices.Sort(lags)
	slices.Sort(fromSend)
	t.Logf("%d nodes: recursive watcher: %d server watch (%d in mntr's count), set in %v; cache: %d watches, loaded in %v; "+
		"over %d changes, from a write's answer to its event: median %v, p99 %v, max %v; from the write's send: median %v, p99 %v",
		nodes, watcherWatches, watcherCount, setIn.Round(time.Microsecond), serverTotal-watcherCount, loadedIn.Round(time.Millisecond),
		changes, lags[changes/2].Round(time.Microsecond), lags[changes*99/100].Round(time.Microsecond), lags[changes-1].Round(time.Microsecond),
		fromSend[changes/2].Round(time.Microsecond), fromSend[changes*99/100].Round(time.Microsecond))
}

// mntrWatchCount returns the server's count of watches of every session,
// data and child (mntr's zk_watch_count), on the first server of ens.
func mntrWatchCount(t *testing.T, ens *zktest.Ensemble) int {
	t.Helper()
	out, err := zktest.FourLetter(ens.Servers()[0], "mntr", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "zk_watch_count\t"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no zk_watch_count in mntr: %s", out)
	return 0
}
