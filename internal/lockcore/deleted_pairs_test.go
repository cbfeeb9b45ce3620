package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestWaiterAndPredecessorDeletedTogetherNeverHolds: eight participants
// of one client (their watches on each other's nodes shared on the
// client) take and release one lock in a loop, while an operator picks a
// waiter X that is not first and deletes X's node and its predecessor's
// in one transaction, X's first, every few tens of milliseconds. A node
// deleted so was never first: its predecessor was there when it went. So
// no Lock may return holding it — the waiter hears its own node's
// deletion before its predecessor's, whether the watches came from its
// setWatches or were shared. Once the operator stops, every participant
// goes on taking the lock.
func TestWaiterAndPredecessorDeletedTogetherNeverHolds(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 8))
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	const n = 8
	var (
		stop, clean atomic.Bool
		after       [n]atomic.Int32
		mu          sync.Mutex
		held        = map[string]bool{} // nodes a Lock returned holding
		wg          sync.WaitGroup
		errMu       sync.Mutex
		errs        []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	for i := range n {
		m := newLock(t, c, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := m.Lock(lctx)
				cancel()
				if err != nil {
					fail(fmt.Errorf("participant %d: Lock: %w", i, err))
					return
				}
				mu.Lock()
				held[m.Node()] = true
				mu.Unlock()
				if clean.Load() {
					after[i].Add(1)
				}
				time.Sleep(time.Millisecond)
				if err := m.Unlock(ctx); err != nil && !errors.Is(err, errLockLost) {
					fail(fmt.Errorf("participant %d: Unlock: %w", i, err))
					return
				}
			}
		}()
	}
	var pairs []string // waiters' nodes deleted with their predecessor's
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		kids, _, err := obs.Children(lock)
		if err == nil {
			cs := lockcore.Sort(kids, lockcore.MutexKinds)
			if len(cs) >= 2 {
				i := 1 + rng.IntN(len(cs)-1)
				x, p := path.Join(lock, cs[i].Name), path.Join(lock, cs[i-1].Name)
				if _, err := obs.Multi(&zk.DeleteRequest{Path: x, Version: -1}, &zk.DeleteRequest{Path: p, Version: -1}); err == nil {
					pairs = append(pairs, x)
				}
			}
		}
		time.Sleep(time.Duration(5+rng.IntN(40)) * time.Millisecond)
	}
	clean.Store(true)
	zktest.Eventually(t, 60*time.Second, "every participant locks after the deletions", func() error {
		for i := range after {
			if after[i].Load() < 3 {
				return fmt.Errorf("participant %d locked %d times since", i, after[i].Load())
			}
		}
		return nil
	})
	stop.Store(true)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	bad := 0
	for _, x := range pairs {
		if held[x] {
			bad++
			if bad <= 3 {
				t.Errorf("a Lock returned holding %s, deleted with its predecessor before its turn", x)
			}
		}
	}
	t.Logf("%d waiters deleted with their predecessor, %d holds in all, %d of the deleted held", len(pairs), len(held), bad)
	if len(pairs) == 0 {
		t.Error("the operator deleted no pair")
	}
}
