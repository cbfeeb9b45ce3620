package election_test

// Tests of ownership and release (docs/locks.md, "Ownership and release")
// for the election: a term ends before its resignation is sent, an
// unanswered resignation is never taken as not done, candidates sharing a
// client lead one at a time, and a term whose node is gone has ended.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestResignWithShortDeadlineEndsTheTerm: Resign whose deadline (100 ms)
// is shorter than the reply time (300 ms) sends the delete, which applies.
// When Resign returns the term is over: Done closed, Context cancelled,
// the error says the deadline and that the outcome is unknown, a second
// Resign says ErrResigned, the node goes, and the candidate can campaign
// again with a new node.
func TestResignWithShortDeadlineEndsTheTerm(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	p := ens.Proxy(t)
	e := newElection(t, open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second)), path, "alpha")
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}

	p.DelayReplies(300 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = term.Resign(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Resign with a deadline shorter than the reply = %v, want DeadlineExceeded", err)
	}
	testkit.WantOutcomeUnknown(t, err)
	if !closed(term.Done()) {
		t.Error("the term's Done is open after Resign returned: it still leads")
	}
	if term.Context().Err() == nil {
		t.Error("the term's Context is not cancelled after Resign returned")
	}
	p.Restore()
	if err := term.Resign(ctx); !errors.Is(err, election.ErrResigned) {
		t.Errorf("a second Resign = %v, want ErrResigned", err)
	}
	zktest.Eventually(t, 5*time.Second, "the term's node is deleted", func() error {
		ok, _, err := obs.Exists(term.Node())
		if err == nil && ok {
			err = errors.New("still there")
		}
		return err
	})
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	next, err := e.Campaign(cctx)
	if err != nil {
		t.Fatalf("Campaign after the unanswered Resign: %v", err)
	}
	if next.Node() == term.Node() {
		t.Errorf("the new term has the old term's node %s", next.Node())
	}
	if err := next.Resign(ctx); err != nil {
		t.Error(err)
	}
}

// handovers runs n handovers of leadership between two candidates on
// their own clients: the leader resigns while the other campaigns. At the
// moment the other's Campaign returns, the resigning term's Done (open
// before Resign) must already be closed. With delay, the resigning
// client's answers are delayed by it (its session stays trusted). It
// returns how many handovers broke the rule.
func handovers(t *testing.T, n int, delay time.Duration) int {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	obs := ens.Conn(t)
	ctx := ctxFor(t, 3*time.Minute)
	var es [2]*election.Election
	var ps [2]*zktest.Proxy
	for i := range es {
		ps[i] = ens.Proxy(t)
		es[i] = newElection(t, open(t, ps[i].Servers(), connection.WithSessionTimeout(10*time.Second)), path, fmt.Sprintf("c%d", i))
	}
	term, err := es[0].Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		term       *election.Term
		err        error
		doneClosed bool
	}
	leader, bad := 0, 0
	for i := range n {
		other := 1 - leader
		prevDone := term.Done()
		if closed(prevDone) {
			t.Fatalf("handover %d: the term ended before its Resign; the check would prove nothing", i)
		}
		res := make(chan result, 1)
		go func() {
			next, err := es[other].Campaign(ctx)
			res <- result{next, err, closed(prevDone)} // at the instant Campaign returned
		}()
		zktest.Eventually(t, 10*time.Second, "the other candidate's node", func() error {
			kids, _, err := obs.Children(path)
			if err == nil && len(kids) != 2 {
				err = fmt.Errorf("%d candidates", len(kids))
			}
			return err
		})
		if delay > 0 {
			ps[leader].DelayReplies(delay)
		}
		rerr := term.Resign(ctx)
		ps[leader].Restore()
		r := <-res
		if rerr != nil || r.err != nil {
			t.Fatalf("handover %d: Resign = %v, Campaign = %v", i, rerr, r.err)
		}
		if !r.doneClosed {
			bad++
		}
		term, leader = r.term, other
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	return bad
}

// TestResignEndsTheTermBeforeTheNextLeaderLeads: a term's Done closes
// before its delete leaves the client, so the next leader, woken by the
// delete, never leads while the resigning term's Done is open — with no
// fault, and with the resigning client's answers delayed 1.5 s.
func TestResignEndsTheTermBeforeTheNextLeaderLeads(t *testing.T) {
	t.Parallel()
	t.Run("no faults", func(t *testing.T) {
		t.Parallel()
		const n = 100
		if bad := handovers(t, n, 0); bad > 0 {
			t.Errorf("in %d of %d handovers the next leader's Campaign returned while the resigning term's Done was open", bad, n)
		}
	})
	t.Run("resigner's answers delayed 1.5s", func(t *testing.T) {
		t.Parallel()
		const n = 3
		if bad := handovers(t, n, 1500*time.Millisecond); bad > 0 {
			t.Errorf("in %d of %d handovers the next leader's Campaign returned while the resigning term's Done was open", bad, n)
		}
	})
}

// TestCandidatesOfOneClientLeadOneAtATime: four candidates on one shared
// client lead 200 terms in all. Whenever a Campaign returns, no other
// candidate's term may have its Done open.
func TestCandidatesOfOneClientLeadOneAtATime(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	const candidates, rounds = 4, 50
	var (
		mu       sync.Mutex
		leading  = map[int]<-chan struct{}{} // candidate -> Done of its term, until its Resign returned
		overlaps []string
		errs     []error
	)
	var wg sync.WaitGroup
	for i := range candidates {
		e := newElection(t, c, path, fmt.Sprintf("c%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				term, err := e.Campaign(ctx)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("candidate %d round %d: Campaign: %w", i, r, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				for other, done := range leading {
					if !closed(done) {
						overlaps = append(overlaps, fmt.Sprintf("c%d elected while c%d's term was open", i, other))
					}
				}
				leading[i] = term.Done()
				mu.Unlock()
				err = term.Resign(ctx)
				mu.Lock()
				delete(leading, i)
				if err != nil {
					errs = append(errs, fmt.Errorf("candidate %d round %d: Resign: %w", i, r, err))
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(overlaps) > 0 {
		t.Errorf("%d of %d terms began while another candidate's term was open, e.g. %v",
			len(overlaps), candidates*rounds, overlaps[:min(len(overlaps), 3)])
	}
}

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
