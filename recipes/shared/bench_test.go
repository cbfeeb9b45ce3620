package shared_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// BenchmarkMarkerCost: what the marker costs a counter's write, on a
// local 3-server ensemble. Each iteration sends, one after the other, a
// plain versioned set of the counter (what Curator and Kazoo send) and
// the transaction a Counter sends (the same set and a versioned set of
// its marker), a whole Counter.Add (a read, then that transaction), and
// a Counter.Add fenced by a held lock's guard (WithGuard: the guard's
// check is a third op of the same transaction); interleaved, so that a
// loaded machine slows all alike. It reports the median and the 90th
// percentile of each, in microseconds.
func BenchmarkMarkerCost(b *testing.B) {
	ens := zktest.Start(b, zktest.WithServers(3))
	c := open(b, ens.Servers())
	ctx := context.Background()
	p := "/bench"
	marker := p + "/_w_marker"
	if _, err := c.Create(ctx, p, make([]byte, 8), connection.Persistent); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Create(ctx, marker, []byte("m"), connection.Ephemeral); err != nil {
		b.Fatal(err)
	}
	cn := newCounter(b, c, "/bench-counter")
	if _, err := cn.Add(ctx, 1); err != nil {
		b.Fatal(err)
	}
	m, err := mutex.New(c, "/bench-lock")
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		b.Fatal(err)
	}
	guarded := newCounter(b, c, "/bench-guarded")
	g := shared.WithGuard(m.Guard())
	if _, err := guarded.Add(ctx, 1, g); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 8)
	var v, k int32
	var set, multi, add, gadd []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := c.Set(ctx, p, data, v); err != nil {
			b.Fatal(err)
		}
		set = append(set, time.Since(start))
		v++
		start = time.Now()
		if _, err := c.Multi(ctx,
			&zk.SetDataRequest{Path: p, Data: data, Version: v},
			&zk.SetDataRequest{Path: marker, Data: []byte("m"), Version: k}); err != nil {
			b.Fatal(err)
		}
		multi = append(multi, time.Since(start))
		v, k = v+1, k+1
		start = time.Now()
		if res, err := cn.Add(ctx, 1); err != nil || !res.Succeeded {
			b.Fatal(res, err)
		}
		add = append(add, time.Since(start))
		start = time.Now()
		if res, err := guarded.Add(ctx, 1, g); err != nil || !res.Succeeded {
			b.Fatal(res, err)
		}
		gadd = append(gadd, time.Since(start))
	}
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"set", set}, {"multi", multi}, {"add", add}, {"guarded-add", gadd}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.name+"-p50-µs")
		b.ReportMetric(float64(m.d[len(m.d)*9/10].Microseconds()), m.name+"-p90-µs")
	}
}
