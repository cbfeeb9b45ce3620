package main

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// countWriter counts the bytes written to it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkExporterScrape10000Recipes: the cost of one scrape with 10,000
// locks (100 directories of 100, each lock with a holder) under the
// watched path: wall time per scrape, bytes, and the process's CPU time
// per scrape; and, once, how long the first full reading took and the
// heap it holds.
func BenchmarkExporterScrape10000Recipes(b *testing.B) {
	const dirs, locks = 100, 100
	ens := shared.Ensemble(b)
	root := ens.Root(b)
	conn := ens.Conn(b)
	acl := zk.WorldACL(zk.PermAll)
	for d := range dirs {
		ops := []any{&zk.CreateRequest{Path: fmt.Sprintf("%s/d%02d", root, d), Acl: acl}}
		for l := range locks {
			p := fmt.Sprintf("%s/d%02d/l%03d", root, d, l)
			ops = append(ops, &zk.CreateRequest{Path: p, Acl: acl},
				&zk.CreateRequest{Path: p + "/_c_6d3f5a0e-1b2c-4d5e-8f90-123456789abc-lock-0000000000", Data: []byte("holder"), Acl: acl})
		}
		if _, err := conn.Multi(ops...); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	e := newExporter(c, []string{root}, 3, defaultMaxSeries, defaultMaxPaths, nil, &syncBuffer{})
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		e.run(ctx, listWorkers)
	}()
	defer func() { cancel(); <-ran }()
	want := dirs * locks * 5 // holders, waiters, oldest wait, holder, warnings
	zktest.Eventually(b, 5*time.Minute, "the first full reading", func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.connected || e.stale != 0 {
			return fmt.Errorf("%d of %d paths not read yet", e.stale, len(e.units))
		}
		return nil
	})
	load := time.Since(start)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	var w countWriter
	if err := e.scrape(&w); err != nil {
		b.Fatal(err)
	}
	text := &syncBuffer{}
	if err := e.scrape(text); err != nil {
		b.Fatal(err)
	}
	if v, _ := sampleOf(text.String(), "zkrecipes_exporter_series"); int(v) != want {
		b.Fatalf("%v series, want %d", v, want)
	}
	w = countWriter{}
	cpu := testkit.CPUTime()
	b.ResetTimer()
	for range b.N {
		if err := e.scrape(&w); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(w.n)/float64(b.N), "bytes/scrape")
	b.ReportMetric(float64((testkit.CPUTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/scrape")
	b.ReportMetric(float64(want), "series")
	b.ReportMetric(load.Seconds(), "s-first-reading")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-heap-held")
}
