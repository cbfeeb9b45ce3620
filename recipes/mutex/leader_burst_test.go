package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestBurstOfWaitersOfTwoClientsAcrossALeaderKill: waiters of two
// clients, most of one, join a lock at once; the leader is killed while
// their creates and listings are in flight, and started again. No two
// waiters ever hold at once (in the process, and as the holder's client
// lists the lock: the holder is the first contender), every waiter holds or returns its
// context's error, and no node is left.
func TestBurstOfWaitersOfTwoClientsAcrossALeaderKill(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	ctx := ctxFor(t, 3*time.Minute)
	lock := "/leaderburst"
	a := open(t, ens.Servers(), connection.WithSessionTimeout(6*time.Second))
	b := open(t, ens.Servers(), connection.WithSessionTimeout(6*time.Second))
	obs := ens.Conn(t)
	var (
		holders      atomic.Int32
		mu           sync.Mutex
		fails        []string
		wg           sync.WaitGroup
		held, gaveUp atomic.Int32
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		fails = append(fails, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// The first contender as the holder's own client lists it, right
	// after its Lock returned: on its session's connection, behind the
	// notifications that made it hold. (Another session's listing, even
	// after a sync, can lag a moment behind on a three-server ensemble.)
	first := func(c *connection.Client) (string, error) {
		kids, _, err := c.Children(ctx, lock)
		if err != nil {
			return "", err
		}
		sort.Slice(kids, func(i, j int) bool { return kids[i][len(kids[i])-10:] < kids[j][len(kids[j])-10:] })
		if len(kids) == 0 {
			return "", errors.New("no contender")
		}
		return path.Join(lock, kids[0]), nil
	}
	var leader int
	zktest.Eventually(t, 30*time.Second, "a leader", func() error {
		var err error
		leader, err = ens.Leader()
		return err
	})
	const waiters = 200
	for i := range waiters {
		c := a
		if i%4 == 3 {
			c = b
		}
		m := newMutex(t, c, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx := ctx
			if i%5 == 0 {
				var cancel context.CancelFunc
				wctx, cancel = context.WithTimeout(ctx, time.Duration(50+20*i)*time.Millisecond)
				defer cancel()
			}
			if err := m.Lock(wctx); err != nil {
				if wctx.Err() == nil {
					fail("waiter %d: Lock: %v", i, err)
				}
				gaveUp.Add(1)
				return
			}
			if n := holders.Add(1); n != 1 {
				fail("waiter %d: %d holders at once", i, n)
			}
			if f, err := first(c); err == nil && f != m.Node() && !closedCh(m.Done()) {
				fail("waiter %d: holds %s, its client's first is %s", i, m.Node(), f)
			}
			time.Sleep(time.Millisecond)
			holders.Add(-1)
			if err := m.Unlock(ctx); err != nil && !errors.Is(err, connection.ErrOutcomeUnknown) {
				fail("waiter %d: Unlock: %v", i, err)
			}
			held.Add(1)
		}()
	}
	time.Sleep(100 * time.Millisecond)
	if err := ens.Kill(leader); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(120 * time.Second):
		testkit.LogGoroutines(t, "waiters still waiting")
		t.Fatalf("%d held and %d gave up of %d waiters", held.Load(), gaveUp.Load(), waiters)
	}
	t.Logf("%d held, %d gave up", held.Load(), gaveUp.Load())
	mu.Lock()
	for _, f := range fails {
		t.Error(f)
	}
	mu.Unlock()
	zktest.Eventually(t, 30*time.Second, "no node left", func() error {
		kids, _, err := obs.Children(lock)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if len(kids) != 0 {
			return fmt.Errorf("%d left, such as %v", len(kids), kids[0])
		}
		return nil
	})
}

func closedCh(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
