package cache_test

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// TestViewMemory measures the Go heap a cache's first full view holds per
// node, the client's part (its watch table) included: the heap after
// collections, with the view loaded, less the heap before the cache was
// made on the same client. The trees are those of the bench command's
// cache scenario (100 directories of leaves, 20 bytes of data a node,
// leaf paths of about 56 bytes). It runs only when ZKRECIPES_CACHE_MEM
// lists the sizes (nodes, root included: "10001,100001"); with
// ZKRECIPES_CACHE_MEMPROFILE it writes a heap profile of each loaded view
// to that prefix followed by the size (inuse_space: the view).
func TestViewMemory(t *testing.T) {
	spec := os.Getenv("ZKRECIPES_CACHE_MEM")
	if spec == "" {
		t.Skip("set ZKRECIPES_CACHE_MEM to the sizes to measure, such as 10001,100001")
	}
	prof := os.Getenv("ZKRECIPES_CACHE_MEMPROFILE")
	if prof != "" {
		old := runtime.MemProfileRate
		runtime.MemProfileRate = 256
		t.Cleanup(func() { runtime.MemProfileRate = old })
	}
	ens := shared.Ensemble(t)
	conn := ens.Conn(t)
	for _, f := range strings.Split(spec, ",") {
		size, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || size < 3 {
			t.Fatalf("ZKRECIPES_CACHE_MEM: %q is not a size", f)
		}
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			root := ens.Root(t) + "/cache-t1" // leaves: 56 bytes, as the bench's
			dirs := max(1, min(100, int(math.Sqrt(float64(size)))))
			leaves := max(0, (size-2)/dirs)
			levels := [][]string{{root}, nil, nil}
			for j := range dirs {
				d := fmt.Sprintf("%s/d%03d", root, j)
				levels[1] = append(levels[1], d)
				for k := range leaves {
					levels[2] = append(levels[2], fmt.Sprintf("%s/n%04d", d, k))
				}
			}
			nodes := 1 + dirs + dirs*leaves
			createData(t, conn, levels, []byte("0123456789abcdefghij"))
			t.Cleanup(func() {
				if err := deleteLevels(conn, levels); err != nil {
					t.Logf("delete the tree: %v", err)
				}
			})
			client := open(t, ens.Servers())
			before := settledHeap()
			cpu0 := testkit.CPUTime()
			start := time.Now()
			c, err := cache.New(client, root)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			<-c.Initialized()
			load := time.Since(start)
			cpu := testkit.CPUTime() - cpu0
			if got := c.Snapshot().Len(); got != nodes {
				t.Fatalf("%d nodes in the view, want %d", got, nodes)
			}
			after := settledHeap()
			per := float64(after-before) / float64(nodes)
			snapStart := time.Now()
			snap := c.Snapshot()
			snapTime := time.Since(snapStart)
			getStart := time.Now()
			for _, p := range levels[2] {
				if _, ok := snap.Get(p); !ok {
					t.Fatalf("%s not in the snapshot", p)
				}
				if _, ok := c.Get(p); !ok {
					t.Fatalf("%s not in the view", p)
				}
			}
			getTime := time.Since(getStart) / time.Duration(max(1, len(levels[2])))
			t.Logf("%d nodes: first view in %v (this process's CPU %v), heap %d B more, %.0f B/node, %d watches; a snapshot in %v, a Get of the view and of the snapshot %v",
				nodes, load.Round(time.Millisecond), cpu.Round(time.Millisecond), after-before, per, c.Stats().Watches, snapTime.Round(100*time.Microsecond), getTime)
			if prof != "" {
				fh, err := os.Create(prof + strconv.Itoa(size))
				if err != nil {
					t.Fatal(err)
				}
				if err := pprof.Lookup("heap").WriteTo(fh, 0); err != nil {
					t.Fatal(err)
				}
				fh.Close()
			}
			runtime.KeepAlive(c)
		})
	}
}

// createData creates the nodes of levels, with data, by multis.
func createData(t testing.TB, conn *zk.Conn, levels [][]string, data []byte) {
	t.Helper()
	for _, level := range levels {
		err := batches(level, bulkBatch, func(ps []string) error {
			reqs := make([]any, len(ps))
			for i, p := range ps {
				reqs[i] = &zk.CreateRequest{Path: p, Data: data, Acl: zk.WorldACL(zk.PermAll)}
			}
			_, err := conn.Multi(reqs...)
			return err
		})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
	}
}

// settledHeap is the heap in use after collections, once two of them
// 100 ms apart agree within 0.5% (at most 5 s).
func settledHeap() int64 {
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	h := heap()
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		n := heap()
		d := n - h
		h = n
		if d < 0 {
			d = -d
		}
		if float64(d) < 0.005*float64(n) {
			break
		}
	}
	return h
}
