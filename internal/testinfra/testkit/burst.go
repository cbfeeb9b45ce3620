package testkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Burst runs the waiters of a test in which many contenders join a lock
// at once under a fault, and tallies what they did: each holds (Held) or
// gives up with its own context's error (GaveUp); whatever else one sees
// is a failure (Fail), reported by Wait.
type Burst struct {
	Held, GaveUp atomic.Int32
	holders      atomic.Int32
	mu           sync.Mutex
	fails        []string
	wg           sync.WaitGroup
}

// Go runs one waiter.
func (b *Burst) Go(waiter func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		waiter()
	}()
}

// Context returns ctx for waiter i, but for every nth one a context that
// ends after base+i*step: those give up, at times spread over the burst.
// Call the CancelFunc when the waiter is done.
func (b *Burst) Context(ctx context.Context, i, nth int, base, step time.Duration) (context.Context, context.CancelFunc) {
	if i%nth != 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, base+time.Duration(i)*step)
}

// Fail records a failure of a waiter.
func (b *Burst) Fail(format string, args ...any) {
	b.mu.Lock()
	b.fails = append(b.fails, fmt.Sprintf(format, args...))
	b.mu.Unlock()
}

// Enter counts waiter i as holding in the process, and fails if another
// does.
func (b *Burst) Enter(i int) {
	if n := b.holders.Add(1); n != 1 {
		b.Fail("waiter %d: %d holders in the process", i, n)
	}
}

// Leave counts a holder out, before its release is sent.
func (b *Burst) Leave() { b.holders.Add(-1) }

// Holders is the number of waiters holding in the process now.
func (b *Burst) Holders() int32 { return b.holders.Load() }

// Wait waits until every waiter is done, or fails the test after within
// (with every goroutine's stack) — after says since when — and then
// reports each failure recorded.
func (b *Burst) Wait(t testing.TB, waiters int, within time.Duration, after string) {
	t.Helper()
	finished := make(chan struct{})
	go func() { b.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(within):
		LogGoroutines(t, "waiters still waiting")
		t.Fatalf("%d held and %d gave up of %d waiters within %v of %s", b.Held.Load(), b.GaveUp.Load(), waiters, within, after)
	}
	t.Logf("%d held, %d gave up", b.Held.Load(), b.GaveUp.Load())
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.fails {
		t.Error(f)
	}
}

// NoChildrenLeft waits up to within until dir has no children but those
// keep accepts (nil: none), as obs lists it (a missing dir has none).
func NoChildrenLeft(t testing.TB, obs *zk.Conn, dir string, within time.Duration, keep func(child string) bool) {
	t.Helper()
	zktest.Eventually(t, within, "no node left in "+dir, func() error {
		kids, _, err := obs.Children(dir)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		var left []string
		for _, k := range kids {
			if keep == nil || !keep(k) {
				left = append(left, k)
			}
		}
		if len(left) != 0 {
			return fmt.Errorf("%d left, such as %v", len(left), left[0])
		}
		return nil
	})
}
