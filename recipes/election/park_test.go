package election_test

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

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestParkedCandidatesCutOffWhileTheQueueMoves: six candidates of one
// client (their watches on each other's nodes one shared Watch each, with
// the parked candidates behind hooked on it) and two of another campaign
// and resign in a loop. Every few hundred milliseconds the first client is
// cut off for a moment (the same session goes on after it), and while it
// is cut an operator deletes a waiting candidate's node: deletions and
// handoffs the parked candidates hear only through the setWatches of the
// reconnection, while parked or between the steps of their wait. No term
// may begin while another's Done is open; a term's node must be first on
// the server while its Done is open; once the cuts stop, every candidate
// goes on leading (no lost wake-up).
func TestParkedCandidatesCutOffWhileTheQueueMoves(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/election"
	obs := ens.Conn(t)
	p, err := zkserver.NewProxy(ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ca := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	cb := open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	sess := ca.Session()
	const n = 8
	var (
		stop, clean atomic.Bool
		after       [n]atomic.Int32
		mu          sync.Mutex
		terms       = map[int]<-chan struct{}{}
		overlaps    []string
		wg          sync.WaitGroup
		errMu       sync.Mutex
		errs        []error
		termsTotal  atomic.Int32
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	for i := range n {
		c := ca
		if i >= 6 {
			c = cb
		}
		e := newElection(t, c, dir, fmt.Sprint("c", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				term, err := e.Campaign(ctx)
				if err != nil {
					if !stop.Load() {
						fail(fmt.Errorf("candidate %d: Campaign: %w", i, err))
					}
					return
				}
				termsTotal.Add(1)
				mu.Lock()
				for j, d := range terms {
					select {
					case <-d:
					default:
						overlaps = append(overlaps, fmt.Sprintf("candidate %d leads beside candidate %d", i, j))
					}
				}
				terms[i] = term.Done()
				mu.Unlock()
				kids, _, lerr := obs.Children(dir)
				if lerr == nil {
					cs := layout.Sort(kids, func(k layout.Kind) bool { return k == layout.Latch })
					if (len(cs) == 0 || path.Join(dir, cs[0].Name) != term.Node()) && !closed(term.Done()) {
						fail(fmt.Errorf("candidate %d leads on %s, the server's first is %v", i, term.Node(), cs[:min(1, len(cs))]))
					}
				}
				if clean.Load() {
					after[i].Add(1)
				}
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				mu.Lock()
				delete(terms, i)
				mu.Unlock()
				_ = term.Resign(ctx)
			}
		}()
	}
	cuts, deleted := 0, 0
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		p.Cut()
		cuts++
		kids, _, err := obs.Children(dir)
		if err == nil {
			cs := layout.Sort(kids, func(k layout.Kind) bool { return k == layout.Latch })
			if len(cs) >= 2 {
				x := path.Join(dir, cs[1+rng.IntN(len(cs)-1)].Name)
				if obs.Delete(x, -1) == nil {
					deleted++
				}
			}
		}
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		p.Restore()
	}
	clean.Store(true)
	zktest.Eventually(t, 60*time.Second, "every candidate leads after the cuts", func() error {
		for i := range after {
			if after[i].Load() < 3 {
				return fmt.Errorf("candidate %d led %d times since", i, after[i].Load())
			}
		}
		return nil
	})
	stop.Store(true)
	wg.Wait()
	for _, err := range errs[:min(len(errs), 10)] {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(overlaps) > 0 {
		t.Errorf("%d overlapping terms, e.g. %v", len(overlaps), overlaps[:min(3, len(overlaps))])
	}
	if ca.Session() != sess {
		t.Logf("the cut-off client's session changed: some cuts were session losses")
	}
	t.Logf("%d cuts, %d waiting candidates deleted while cut, %d terms", cuts, deleted, termsTotal.Load())
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		t.Error(err)
	}
}
