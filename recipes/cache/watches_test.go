package cache_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// watchCount returns the server's count of watches, data and child, of
// every session (mntr's zk_watch_count): wchc lists data watches only.
func watchCount(t testing.TB, ens *zktest.Ensemble) int {
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

// TestWatchesPerNode: on a server of its own (so that mntr counts this
// cache's watches alone), a cached node costs one data watch and, when
// its children are cached, one child watch — after the load and after
// every node changed, whatever the number of reads.
func TestWatchesPerNode(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t)
	conn := ens.Conn(t)
	root := "/watches"
	mustCreate(t, conn, root, nil)
	const dirs, leaves = 10, 19
	makeTree(t, conn, root, dirs, leaves)
	const nodes = 1 + dirs + dirs*leaves
	for _, tc := range []struct {
		name     string
		opts     []cache.Option
		nodes    int
		children int // nodes with a child watch
	}{
		{"tree", nil, nodes, nodes},
		{"directory", []cache.Option{cache.WithMaxDepth(1)}, 1 + dirs, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := open(t, ens.Servers())
			started := testkit.OwnGoroutines(t)
			c := newCache(t, client, root, tc.opts...)
			waitInit(t, c)
			check := func(when string) {
				t.Helper()
				want := tc.nodes + tc.children
				zktest.Eventually(t, 10*time.Second, "watches "+when, func() error {
					data := testkit.ServerWatches(t, ens, client.Session().ID())
					all, st := watchCount(t, ens), c.Stats()
					if data != tc.nodes || all != want || int(st.Watches) != want || client.Stats().PendingWatches != want {
						return fmt.Errorf("server: %d data watches, %d in all; cache %d, client %d; want %d and %d",
							data, all, st.Watches, client.Stats().PendingWatches, tc.nodes, want)
					}
					return nil
				})
				t.Logf("%s: %d nodes, %d data watches, %d watches in all, %d reads", when, c.Snapshot().Len(), tc.nodes, want, c.Stats().Reads)
			}
			check("after the load")
			// No goroutine per node: the worker, and the client's state
			// listener for it.
			zktest.Eventually(t, 5*time.Second, "goroutines settle", func() error {
				if n := started(); n > 2 {
					return fmt.Errorf("%d goroutines started by the cache of %d nodes", n, tc.nodes)
				}
				return nil
			})
			for i := range dirs {
				p := fmt.Sprintf("%s/a%d", root, i)
				if _, err := conn.Set(p, []byte("x"), -1); err != nil {
					t.Fatal(err)
				}
				mustCreate(t, conn, p+"/new", nil)
				if err := conn.Delete(p+"/new", -1); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Sync(ctxFor(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			check("after changes")
			c.Close()
		})
	}
}
