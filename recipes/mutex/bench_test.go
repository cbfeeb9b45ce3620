package mutex_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
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

// BenchmarkContendedLockUnlock: two Mutex values of one client take the
// lock in turn, so that most Locks wait for the other's Unlock; with
// -benchmem, the client-side allocations of a Lock that waited and its
// Unlock. b.N counts the holds of both.
func BenchmarkContendedLockUnlock(b *testing.B) {
	ens := shared.Ensemble(b)
	c := open(b, ens.Servers())
	path := ens.Root(b) + "/lock"
	ms := []*mutex.Mutex{newMutex(b, c, path), newMutex(b, c, path)}
	ctx := context.Background()
	var holds atomic.Int64
	errs := make(chan error, len(ms))
	b.ReportAllocs()
	b.ResetTimer()
	for _, m := range ms {
		go func() {
			for holds.Add(1) <= int64(b.N) {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				if err := m.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range ms {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdleWaiters: Mutex values of one client wait behind holders —
// 100 or 1,000 on one lock, or 10,000 spread over 100 locks, as a fleet's
// idle waiters are; what each waiter costs while it waits — heap and stack
// bytes (and apart: stack, heap spans, live heap), goroutines, watches —
// measured once they all wait, and the CPU the process spends in a second
// of waiting.
func BenchmarkIdleWaiters(b *testing.B) {
	for _, sz := range []struct{ locks, perLock int }{{1, 100}, {1, 1000}, {100, 100}} {
		b.Run(fmt.Sprintf("%dx%d", sz.locks, sz.perLock), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				idleCost(b, sz.locks, sz.perLock)
			}
		})
	}
}

func idleCost(b *testing.B, locks, perLock int) {
	ens := shared.Ensemble(b)
	c := open(b, ens.Servers())
	root := ens.Root(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var holders []*mutex.Mutex
	for l := range locks {
		h := newMutex(b, c, fmt.Sprintf("%s/lock-%d", root, l))
		if err := h.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		holders = append(holders, h)
	}
	n := locks * perLock
	before := measure()
	done := make(chan error, n)
	for l := range locks {
		for range perLock {
			m, err := mutex.New(c, fmt.Sprintf("%s/lock-%d", root, l))
			if err != nil {
				b.Fatal(err)
			}
			go func() { done <- m.Lock(ctx) }()
		}
	}
	for _, h := range holders {
		for {
			ps, err := h.Participants(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(ps) == perLock+1 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(200 * time.Millisecond) // every waiter parked on its watches
	after := measure()
	cpu0 := processCPU()
	time.Sleep(time.Second)
	idleCPU := processCPU() - cpu0
	b.ReportMetric(float64(after.bytes-before.bytes)/float64(n), "bytes/waiter")
	b.ReportMetric(float64(after.stack-before.stack)/float64(n), "stack-bytes/waiter")
	b.ReportMetric(float64(after.heap-before.heap)/float64(n), "heap-bytes/waiter")
	b.ReportMetric(float64(after.live-before.live)/float64(n), "live-heap-bytes/waiter")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(n), "goroutines/waiter")
	b.ReportMetric(float64(c.Stats().PendingWatches)/float64(n), "watches/waiter")
	b.ReportMetric(float64(idleCPU.Microseconds())/1000, "idle-CPU-ms/s")
	cancel()
	for range n {
		<-done
	}
	for _, h := range holders {
		_ = h.Unlock(context.Background())
	}
}

// usage is what the process holds: bytes is heap and stacks in use (the
// spans), split into stack and heap; live is the heap's live objects, so
// that heap - live is what sparse spans cost.
type usage struct{ bytes, stack, heap, live, goroutines int64 }

func measure() usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{
		bytes: int64(ms.HeapInuse + ms.StackInuse), stack: int64(ms.StackInuse), heap: int64(ms.HeapInuse),
		live:       int64(ms.HeapAlloc),
		goroutines: int64(runtime.NumGoroutine()),
	}
}
