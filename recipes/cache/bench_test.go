package cache_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// buildShape creates about size nodes under root: flat (all children of
// root) or a tree three levels deep. It returns the number of nodes,
// root included.
func buildShape(b testing.TB, conn *zk.Conn, root, shape string, size int) int {
	b.Helper()
	var reqs []any
	n := 1
	flush := func() {
		if len(reqs) > 0 {
			if _, err := conn.Multi(reqs...); err != nil {
				b.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	add := func(p string) {
		reqs = append(reqs, &zk.CreateRequest{Path: p, Data: []byte(p), Acl: zk.WorldACL(zk.PermAll)})
		n++
		if len(reqs) == 200 {
			flush()
		}
	}
	switch shape {
	case "flat":
		for i := range size - 1 {
			add(fmt.Sprintf("%s/n%07d", root, i))
		}
	case "tree":
		f := 1
		for 1+f+f*f+f*f*f < size {
			f++
		}
		for i := range f {
			a := fmt.Sprintf("%s/a%d", root, i)
			add(a)
			for j := range f {
				bb := fmt.Sprintf("%s/b%d", a, j)
				add(bb)
				for k := range f {
					add(fmt.Sprintf("%s/c%d", bb, k))
				}
			}
			flush()
		}
	}
	flush()
	return n
}

// benchConcurrency is WithConcurrency in BenchmarkFirstView.
var benchConcurrency = cache.DefaultConcurrency

// BenchmarkFirstView: the time from New to Initialized for a flat
// directory and a three-level tree, with the reads in flight the default
// allows; the heap the view and its watches hold per node (cache and
// client together); the reads per node.
func BenchmarkFirstView(b *testing.B) {
	for _, size := range []int{1_000, 10_000} {
		for _, shape := range []string{"flat", "tree"} {
			b.Run(fmt.Sprintf("%s-%d", shape, size), func(b *testing.B) {
				ens := shared.Ensemble(b)
				root := ens.Root(b)
				conn := ens.Conn(b)
				nodes := buildShape(b, conn, root, shape, size)
				var total time.Duration
				var heap, reads float64
				for range b.N {
					b.StopTimer()
					client := open(b, ens.Servers())
					runtime.GC()
					var m0, m1 runtime.MemStats
					runtime.ReadMemStats(&m0)
					b.StartTimer()
					start := time.Now()
					c, err := cache.New(client, root, cache.WithConcurrency(benchConcurrency))
					if err != nil {
						b.Fatal(err)
					}
					<-c.Initialized()
					total += time.Since(start)
					b.StopTimer()
					if got := c.Snapshot().Len(); got != nodes {
						b.Fatalf("%d nodes in the view, want %d", got, nodes)
					}
					runtime.GC()
					runtime.ReadMemStats(&m1)
					heap += float64(m1.HeapAlloc) - float64(m0.HeapAlloc)
					reads += float64(c.Stats().Reads)
					c.Close()
					client.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(nodes)*float64(b.N)/total.Seconds(), "nodes/s")
				b.ReportMetric(heap/float64(b.N)/float64(nodes), "heap-B/node")
				b.ReportMetric(reads/float64(b.N)/float64(nodes), "reads/node")
			})
		}
	}
}
