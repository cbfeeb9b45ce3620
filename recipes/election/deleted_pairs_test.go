package election_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCandidateDeletedWithPredecessorNeverLeads: an election's candidates
// keep a window of the queue (three ahead) and set their watches (their
// own node's, their predecessor's and the one before) in one setWatches.
// Eight candidates of one client campaign and resign in a loop while an
// operator deletes a waiting candidate's node and its predecessor's in
// one transaction, the candidate's first, every few tens of milliseconds.
// Such a node was never first, so no Campaign may return a term on it;
// no term may begin while another's Done is open; and once the operator
// stops every candidate goes on leading.
func TestCandidateDeletedWithPredecessorNeverLeads(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/election"
	obs := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	const n = 8
	var (
		stop, clean atomic.Bool
		after       [n]atomic.Int32
		mu          sync.Mutex
		led         = map[string]bool{}
		terms       = map[int]<-chan struct{}{}
		overlaps    []string
		wg          sync.WaitGroup
		errMu       sync.Mutex
		errs        []error
	)
	fail := func(err error) {
		t.Logf("at %s: %v", time.Now().Format("15:04:05.000"), err) // now: a check that gives up first hides it
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	for i := range n {
		e := newElection(t, c, dir, fmt.Sprint("c", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				term, err := e.Campaign(cctx)
				cancel()
				if err != nil {
					fail(fmt.Errorf("candidate %d: Campaign: %w", i, err))
					return
				}
				mu.Lock()
				led[term.Node()] = true
				for j, d := range terms {
					select {
					case <-d:
					default:
						overlaps = append(overlaps, fmt.Sprintf("candidate %d leads beside candidate %d", i, j))
					}
				}
				terms[i] = term.Done()
				mu.Unlock()
				if clean.Load() {
					after[i].Add(1)
				}
				time.Sleep(time.Millisecond)
				mu.Lock()
				delete(terms, i)
				mu.Unlock()
				_ = term.Resign(ctx)
			}
		}()
	}
	var pairs []string
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		kids, _, err := obs.Children(dir)
		if err == nil {
			cs := layout.Sort(kids, func(k layout.Kind) bool { return k == layout.Latch })
			if len(cs) >= 2 {
				i := 1 + rng.IntN(len(cs)-1)
				x, p := path.Join(dir, cs[i].Name), path.Join(dir, cs[i-1].Name)
				if _, err := obs.Multi(&zk.DeleteRequest{Path: x, Version: -1}, &zk.DeleteRequest{Path: p, Version: -1}); err == nil {
					pairs = append(pairs, x)
				}
			}
		}
		time.Sleep(time.Duration(5+rng.IntN(40)) * time.Millisecond)
	}
	clean.Store(true)
	zktest.Eventually(t, 60*time.Second, "every candidate leads after the deletions", func() error {
		for i := range after {
			if after[i].Load() < 3 {
				return fmt.Errorf("candidate %d led %d times since", i, after[i].Load())
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
		if led[x] {
			bad++
			if bad <= 3 {
				t.Errorf("a Campaign returned a term on %s, deleted with its predecessor before its turn", x)
			}
		}
	}
	if len(overlaps) > 0 {
		t.Errorf("%d overlapping terms, e.g. %v", len(overlaps), overlaps[:min(3, len(overlaps))])
	}
	t.Logf("%d candidates deleted with their predecessor, %d terms, %d of the deleted led", len(pairs), len(led), bad)
	if len(pairs) == 0 {
		t.Error("the operator deleted no pair")
	}
}
