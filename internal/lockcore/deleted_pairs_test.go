package lockcore_test

import (
	"math/rand/v2"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
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
	const n = 8
	var (
		mu   sync.Mutex
		held = map[string]bool{} // nodes a Lock returned holding
	)
	ch := newChurn(t, ctxFor(t, 3*time.Minute), n)
	for i := range n {
		m := newLock(t, c, lock)
		ch.run(i, m, func() error {
			mu.Lock()
			held[m.Node()] = true
			mu.Unlock()
			time.Sleep(time.Millisecond)
			return nil
		})
	}
	var pairs []string // waiters' nodes deleted with their predecessor's
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		kids, _, err := obs.Children(lock)
		if err == nil {
			cs := layout.Sort(kids, layout.MutexKinds)
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
	ch.settle("deletions")
	ch.finish()
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
