package mutex_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// BenchmarkLockUnlock: an uncontended Lock+Unlock on one client; with
// -benchmem, the client-side allocations of a cycle.
func BenchmarkLockUnlock(b *testing.B) {
	ens := shared.Ensemble(b)
	lockUnlock(b, open(b, ens.Servers()), ens.Root(b)+"/lock")
}

// BenchmarkLockUnlockObserved is BenchmarkLockUnlock with an observer
// that counts every event into atomics: beside it, what observing costs.
func BenchmarkLockUnlockObserved(b *testing.B) {
	ens := shared.Ensemble(b)
	var counts countingObserver
	lockUnlock(b, open(b, ens.Servers(), connection.WithObserver(counts.observer())), ens.Root(b)+"/lock")
	if counts.holds.Load() < int64(b.N) || counts.holdEnds.Load() != counts.holds.Load() || counts.requestEnds.Load() != counts.requests.Load() {
		b.Fatalf("observer counted %d holds (%d ended), %d requests (%d ended) for %d cycles",
			counts.holds.Load(), counts.holdEnds.Load(), counts.requests.Load(), counts.requestEnds.Load(), b.N)
	}
	b.ReportMetric(float64(counts.requests.Load())/float64(b.N), "requests/op")
}

// BenchmarkLockUnlockObserverOverhead interleaves the two above on one
// machine's moment: blocks of cycles on a client without an observer and
// on one with the counting observer, in turn and in alternating order,
// so that the load of a shared machine falls on both alike. b.N cycles each; it reports each
// one's time, CPU time and allocations a cycle, and the observed one's
// extra time and CPU time in percent.
func BenchmarkLockUnlockObserverOverhead(b *testing.B) {
	ens := shared.Ensemble(b)
	root := ens.Root(b)
	var counts countingObserver
	type variant struct {
		m                 *mutex.Mutex
		wall, cpu, allocs int64
	}
	vs := []*variant{
		{m: newMutex(b, open(b, ens.Servers()), root+"/none")},
		{m: newMutex(b, open(b, ens.Servers(), connection.WithObserver(counts.observer())), root+"/observed")},
	}
	ctx := context.Background()
	cycle := func(m *mutex.Mutex) {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, v := range vs {
		for range 20 { // warm both clients' connections and the servers' paths
			cycle(v.m)
		}
	}
	const block = 50
	var ms runtime.MemStats
	b.ResetTimer()
	for done := 0; done < b.N; done += block {
		n := min(block, b.N-done)
		order := vs
		if done/block%2 == 1 {
			order = []*variant{vs[1], vs[0]} // neither always goes first
		}
		for _, v := range order {
			runtime.ReadMemStats(&ms)
			mallocs, cpu, began := ms.Mallocs, testkit.CPUTime(), time.Now()
			for range n {
				cycle(v.m)
			}
			v.wall += int64(time.Since(began))
			v.cpu += int64(testkit.CPUTime() - cpu)
			runtime.ReadMemStats(&ms)
			v.allocs += int64(ms.Mallocs - mallocs)
		}
	}
	b.StopTimer()
	per := func(x int64) float64 { return float64(x) / float64(b.N) }
	none, obs := vs[0], vs[1]
	b.ReportMetric(per(none.wall), "none-ns/op")
	b.ReportMetric(per(obs.wall), "observed-ns/op")
	b.ReportMetric(per(none.cpu), "none-cpu-ns/op")
	b.ReportMetric(per(obs.cpu), "observed-cpu-ns/op")
	b.ReportMetric(per(none.allocs), "none-allocs/op")
	b.ReportMetric(per(obs.allocs), "observed-allocs/op")
	b.ReportMetric(100*(float64(obs.wall)/float64(none.wall)-1), "extra-time-%")
	b.ReportMetric(100*(float64(obs.cpu)/float64(none.cpu)-1), "extra-cpu-%")
}

// lockUnlock takes and releases a mutex at path b.N times. Besides the
// time, it reports the process's CPU time a cycle (cpu-ns/op), which the
// servers' work and the machine's load do not blur.
func lockUnlock(b *testing.B, c *connection.Client, path string) {
	m := newMutex(b, c, path)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testkit.CPUTime()
	for i := 0; i < b.N; i++ {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(testkit.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// countingObserver counts what it is told.
type countingObserver struct {
	requests, requestEnds, notifications, states atomic.Int64
	waits, waitEnds, holds, holdEnds             atomic.Int64
}

func (o *countingObserver) observer() *connection.Observer {
	return &connection.Observer{
		Request: func(context.Context, connection.Request) func(connection.RequestDone) {
			o.requests.Add(1)
			return func(connection.RequestDone) { o.requestEnds.Add(1) }
		},
		Notification: func(connection.Notification) { o.notifications.Add(1) },
		StateChange:  func(connection.StateChange) { o.states.Add(1) },
		Wait: func(context.Context, connection.Wait) (context.Context, func(connection.WaitDone)) {
			o.waits.Add(1)
			return nil, func(connection.WaitDone) { o.waitEnds.Add(1) }
		},
		Hold: func(context.Context, connection.Hold) func(connection.HoldDone) {
			o.holds.Add(1)
			return func(connection.HoldDone) { o.holdEnds.Add(1) }
		},
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
