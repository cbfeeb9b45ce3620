package election_test

// Candidates whose nodes an operator deletes do not lead. The contract
// every hold keeps is holdtest's (hold_test.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCandidatesWhoseNodesAreDeletedDoNotLead: a leader and three waiting
// candidates, each on its own client; an operator deletes every child of
// the election path (as zkCli's deleteall of the children would), and a
// newcomer campaigns. No candidate may lead without its node: within a
// couple of seconds every term with Done open has its node on the server,
// there is at most one such term, and it is the first in line there.
func TestCandidatesWhoseNodesAreDeletedDoNotLead(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	obs := ens.Conn(t)
	watcher := newElection(t, open(t, ens.Servers()), path, "observer")
	ctx, stop := context.WithCancel(ctxFor(t, time.Minute))
	defer stop()

	type won struct {
		id   string
		term *election.Term
	}
	var (
		mu    sync.Mutex
		terms []won
		wg    sync.WaitGroup
	)
	campaign := func(id string) {
		e := newElection(t, open(t, ens.Servers()), path, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			term, err := e.Campaign(ctx)
			if err != nil {
				return // ctx ended at the end of the test
			}
			mu.Lock()
			terms = append(terms, won{id, term})
			mu.Unlock()
		}()
	}
	defer func() {
		stop()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, w := range terms {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = w.term.Resign(rctx)
			cancel()
		}
	}()

	campaign("c0")
	zktest.Eventually(t, 10*time.Second, "c0 leads", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(terms) != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	for _, id := range []string{"c1", "c2", "c3"} {
		campaign(id)
	}
	zktest.Eventually(t, 10*time.Second, "four candidates", func() error {
		kids, _, err := obs.Children(path)
		if err == nil && len(kids) != 4 {
			err = fmt.Errorf("%d candidates", len(kids))
		}
		return err
	})

	// The operator.
	kids, _, err := obs.Children(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if err := obs.Delete(path+"/"+k, -1); err != nil {
			t.Fatal(err)
		}
	}
	campaign("newcomer")

	check := func() error {
		ps, err := watcher.Participants(ctx)
		if err != nil {
			return err
		}
		on := map[string]bool{}
		for _, p := range ps {
			on[p.Node] = true
		}
		mu.Lock()
		ts := slices.Clone(terms)
		mu.Unlock()
		var open, problems []string
		for _, w := range ts {
			if closed(w.term.Done()) {
				continue
			}
			open = append(open, w.id)
			if !on[w.term.Node()] {
				problems = append(problems, fmt.Sprintf("%s leads (Done open) but its node %s is gone", w.id, w.term.Node()))
			}
		}
		if len(open) > 1 {
			problems = append(problems, fmt.Sprintf("%d terms with Done open: %v", len(open), open))
		}
		if len(open) == 1 && (len(ps) == 0 || ps[0].ID != open[0]) {
			problems = append(problems, fmt.Sprintf("%s leads (Done open) but the server's line is %v", open[0], ps))
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	}
	zktest.Eventually(t, 3*time.Second, "no term leads without its node, at most one leads", check)
	// Nothing marks the moment after which no candidate can wrongly take
	// the lead any more: watch for half a second more.
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := check(); err != nil {
			t.Fatal(err)
		}
	}
}
