package mutex_test

import (
	"errors"
	"path"
	"sort"
	"testing"
	"time"

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
	var burst testkit.Burst
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
		burst.Go(func() {
			wctx, cancel := burst.Context(ctx, i, 5, 50*time.Millisecond, 20*time.Millisecond)
			defer cancel()
			if err := m.Lock(wctx); err != nil {
				if wctx.Err() == nil {
					burst.Fail("waiter %d: Lock: %v", i, err)
				}
				burst.GaveUp.Add(1)
				return
			}
			burst.Enter(i)
			if f, err := first(c); err == nil && f != m.Node() && !closedCh(m.Done()) {
				burst.Fail("waiter %d: holds %s, its client's first is %s", i, m.Node(), f)
			}
			time.Sleep(time.Millisecond)
			burst.Leave()
			if err := m.Unlock(ctx); err != nil && !errors.Is(err, connection.ErrOutcomeUnknown) {
				burst.Fail("waiter %d: Unlock: %v", i, err)
			}
			burst.Held.Add(1)
		})
	}
	time.Sleep(100 * time.Millisecond)
	if err := ens.Kill(leader); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
	burst.Wait(t, waiters, 120*time.Second, "the leader's kill")
	testkit.NoChildrenLeft(t, obs, lock, 30*time.Second, nil)
}

func closedCh(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
