package mutex_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// BenchmarkLockUnlock: an uncontended Lock+Unlock on one client; with
// -benchmem, the client-side allocations of a cycle.
func BenchmarkLockUnlock(b *testing.B) {
	ens := shared.Ensemble(b)
	c := open(b, ens.Servers())
	m := newMutex(b, c, ens.Root(b)+"/lock")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdleWaiters: n Mutex values of one client wait behind a
// holder; what each waiter costs while it waits — heap and stack bytes,
// goroutines — measured once they all wait.
func BenchmarkIdleWaiters(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				idleCost(b, n)
			}
		})
	}
}

func idleCost(b *testing.B, n int) {
	ens := shared.Ensemble(b)
	c := open(b, ens.Servers())
	path := ens.Root(b) + "/lock"
	holder := newMutex(b, c, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := holder.Lock(ctx); err != nil {
		b.Fatal(err)
	}
	before := measure()
	done := make(chan error, n)
	for range n {
		m, err := mutex.New(c, path)
		if err != nil {
			b.Fatal(err)
		}
		go func() { done <- m.Lock(ctx) }()
	}
	for {
		ps, err := holder.Participants(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(ps) == n+1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // every waiter parked on its watches
	after := measure()
	b.ReportMetric(float64(after.bytes-before.bytes)/float64(n), "bytes/waiter")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(n), "goroutines/waiter")
	b.ReportMetric(float64(c.Stats().PendingWatches)/float64(n), "watches/waiter")
	cancel()
	for range n {
		<-done
	}
	_ = holder.Unlock(context.Background())
}

type usage struct{ bytes, goroutines int64 }

func measure() usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{bytes: int64(ms.HeapInuse + ms.StackInuse), goroutines: int64(runtime.NumGoroutine())}
}
