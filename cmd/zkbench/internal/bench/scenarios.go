package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Uncontended is one participant taking and releasing a free lock.
type Uncontended struct {
	Impl       string
	Iterations int
	P50, P99   time.Duration
}

// RunUncontended measures Lock+Unlock of a free lock, iterations times
// after a short warm-up.
func RunUncontended(ctx context.Context, impl Impl, servers []string, lockPath string, iterations int) (Uncontended, error) {
	if impl.peer != nil {
		p50, p99, err := impl.peer.latencies(ctx, pin(servers, 0), lockPath, "uncontended", iterations)
		return Uncontended{Impl: impl.Name, Iterations: iterations, P50: p50, P99: p99}, err
	}
	p, err := impl.New(ctx, pin(servers, 0), lockPath)
	if err != nil {
		return Uncontended{}, err
	}
	defer p.Close()
	lat := make([]time.Duration, 0, iterations)
	for i := -iterations / 10; i < iterations; i++ {
		start := time.Now()
		if err := p.Lock(ctx); err != nil {
			return Uncontended{}, fmt.Errorf("%s lock: %w", impl.Name, err)
		}
		if err := p.Unlock(ctx); err != nil {
			return Uncontended{}, fmt.Errorf("%s unlock: %w", impl.Name, err)
		}
		if i >= 0 {
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	return Uncontended{Impl: impl.Name, Iterations: iterations, P50: quantile(lat, 0.5), P99: quantile(lat, 0.99)}, nil
}

// pin gives participant i one server, the same for every implementation:
// a session on the leader writes faster than one on a follower, and a
// comparison must not depend on where the client library's shuffle put
// each session.
func pin(servers []string, i int) []string { return servers[i%len(servers) : i%len(servers)+1] }

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Contended is n participants taking the lock in a loop.
type Contended struct {
	Impl         string
	Participants int
	Handoffs     int64         // acquisitions in the measured window
	Elapsed      time.Duration // the window
	WakeUps      int64         // watch notifications the servers sent in the window
}

// PerSecond is the handoff rate.
func (c Contended) PerSecond() float64 { return float64(c.Handoffs) / c.Elapsed.Seconds() }

// WakeUpsPerRelease is how many clients a release woke, on average.
func (c Contended) WakeUpsPerRelease() float64 {
	if c.Handoffs == 0 {
		return 0
	}
	return float64(c.WakeUps) / float64(c.Handoffs)
}

// RunContended starts n participants, each with its own session, that
// take and release the lock as fast as they can, and counts the handoffs
// in a window of length d once all of them are queued.
func RunContended(ctx context.Context, impl Impl, servers []string, lockPath string, n int, d time.Duration) (Contended, error) {
	if impl.peer != nil {
		return impl.peer.contended(ctx, servers, lockPath, n, d)
	}
	ps := make([]Participant, n)
	var err error
	for i := range ps {
		if ps[i], err = impl.New(ctx, pin(servers, i), lockPath); err != nil {
			for _, p := range ps[:i] {
				p.Close()
			}
			return Contended{}, err
		}
	}
	defer func() {
		for _, p := range ps {
			p.Close()
		}
	}()
	locks := make([]lockUnlock, len(ps))
	for i, p := range ps {
		locks[i] = p
	}
	// Warm up until the queue is full, then measure.
	return contend(ctx, impl.Name, servers, locks, min(d/2, 2*time.Second), d)
}

// contend runs every lock value in a loop of Lock and Unlock, lets the
// queue fill for fill once every loop has begun, and counts the handoffs
// and the servers' watch notifications in a window of length d (each end
// reads the servers' counters, then the handoff count, in the same order,
// so both count the same stretch of time).
func contend(ctx context.Context, impl string, servers []string, locks []lockUnlock, fill, d time.Duration) (Contended, error) {
	var (
		handoffs, begun atomic.Int64
		stop            = make(chan struct{})
		wg              sync.WaitGroup
		errOnce         sync.Once
		firstErr        error
	)
	fail := func(op string, err error) { errOnce.Do(func() { firstErr = fmt.Errorf("%s %s: %w", impl, op, err) }) }
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			begun.Add(1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := l.Lock(ctx); err != nil {
					fail("lock", err)
					return
				}
				handoffs.Add(1)
				if err := l.Unlock(ctx); err != nil {
					fail("unlock", err)
					return
				}
			}
		}()
	}
	for begun.Load() < int64(len(locks)) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(fill)
	w, err := localWindow(ctx, servers, d, watchTriggers, handoffs.Load)
	close(stop)
	wg.Wait()
	if firstErr != nil {
		return Contended{}, firstErr
	}
	if err != nil {
		return Contended{}, err
	}
	return Contended{Impl: impl, Participants: len(locks), Handoffs: w.count, Elapsed: w.elapsed, WakeUps: w.server}, nil
}

// Handoff is the time from a holder's Unlock call to the return of the
// Lock of the one waiter queued behind it: the critical path of a handoff,
// without the load of a long queue.
type Handoff struct {
	Impl       string
	Iterations int
	P50, P99   time.Duration
}

// RunHandoff alternates two participants on different servers: one holds,
// the other waits; the holder releases and the time until the waiter holds
// is measured. A short pause before each release lets the waiter queue
// and set its watch.
func RunHandoff(ctx context.Context, impl Impl, servers []string, lockPath string, iterations int) (Handoff, error) {
	if impl.peer != nil {
		p50, p99, err := impl.peer.latencies(ctx, servers, lockPath, "handoff", iterations)
		return Handoff{Impl: impl.Name, Iterations: iterations, P50: p50, P99: p99}, err
	}
	var ps [2]Participant
	for i := range ps {
		p, err := impl.New(ctx, pin(servers, i), lockPath)
		if err != nil {
			if i == 1 {
				ps[0].Close()
			}
			return Handoff{}, err
		}
		ps[i] = p
		defer p.Close()
	}
	if err := ps[0].Lock(ctx); err != nil {
		return Handoff{}, err
	}
	lat := make([]time.Duration, 0, iterations)
	for i := range iterations {
		holder, waiter := ps[i%2], ps[(i+1)%2]
		acquired := make(chan error, 1)
		var at time.Time
		go func() {
			err := waiter.Lock(ctx)
			at = time.Now()
			acquired <- err
		}()
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		if err := holder.Unlock(ctx); err != nil {
			return Handoff{}, fmt.Errorf("%s unlock: %w", impl.Name, err)
		}
		if err := <-acquired; err != nil {
			return Handoff{}, fmt.Errorf("%s lock: %w", impl.Name, err)
		}
		lat = append(lat, at.Sub(start))
	}
	if err := ps[iterations%2].Unlock(ctx); err != nil {
		return Handoff{}, err
	}
	slices.Sort(lat)
	return Handoff{Impl: impl.Name, Iterations: iterations, P50: quantile(lat, 0.5), P99: quantile(lat, 0.99)}, nil
}
