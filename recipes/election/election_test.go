package election_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestNewRefusesBadInput(t *testing.T) {
	t.Parallel()
	c := open(t, shared.Ensemble(t).Servers())
	for _, tc := range []struct {
		name string
		c    *connection.Client
		path string
		id   string
		want error
	}{
		{"nil client", nil, "/e", "a", connection.ErrInvalidOption},
		{"relative path", c, "e", "a", connection.ErrInvalidPath},
		{"trailing slash", c, "/e/", "a", connection.ErrInvalidPath},
		{"root", c, "/", "a", connection.ErrInvalidPath},
		{"empty id", c, "/e", "", election.ErrInvalidID},
		{"id not UTF-8", c, "/e", "\xff", election.ErrInvalidID},
	} {
		if _, err := election.New(tc.c, tc.path, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("%s: New = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestCampaignResignHandsOver: the first candidate leads, the second waits
// until the first resigns; Leader and Participants say who leads; tokens
// increase; misuse gets its sentinel.
func TestCampaignResignHandsOver(t *testing.T) {
	t.Parallel()
	_, _, ctx, a, b := alphaBeta(t)

	if _, err := a.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader before any campaign = %v, want ErrNoLeader", err)
	}
	ta, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Campaign(ctx); !errors.Is(err, election.ErrLeading) {
		t.Fatalf("second Campaign while leading = %v, want ErrLeading", err)
	}
	won := campaignLater(t, ctx, b)
	waitParticipants(t, ctx, b, 2)
	ps, err := b.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].ID != "alpha" || !ps[0].Leader || ps[1].ID != "beta" || ps[1].Leader || ps[0].Node != ta.Node() {
		t.Fatalf("participants %+v", ps)
	}
	if id, err := b.Leader(ctx); err != nil || id != "alpha" {
		t.Fatalf("Leader = %q, %v", id, err)
	}
	select {
	case <-won:
		t.Fatal("beta leads while alpha does")
	case <-time.After(300 * time.Millisecond):
	}
	if err := ta.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if !closed(ta.Done()) || !errors.Is(context.Cause(ta.Context()), election.ErrResigned) {
		t.Fatalf("resigned term: Done closed %v, cause %v", closed(ta.Done()), context.Cause(ta.Context()))
	}
	if err := ta.Resign(ctx); !errors.Is(err, election.ErrResigned) {
		t.Fatalf("second Resign = %v, want ErrResigned", err)
	}
	tb := <-won
	if tb == nil {
		t.FailNow()
	}
	if tb.Token() <= ta.Token() {
		t.Fatalf("tokens %d then %d: not increasing", ta.Token(), tb.Token())
	}
	if id, err := a.Leader(ctx); err != nil || id != "beta" {
		t.Fatalf("Leader = %q, %v", id, err)
	}
	if err := tb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if ps, err := a.Participants(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("participants after both resigned: %+v, %v", ps, err)
	}
}

// TestCancelledCampaignLeavesNoNode: a candidate that stops waiting
// deletes its node, as the server shows.
func TestCancelledCampaignLeavesNoNode(t *testing.T) {
	t.Parallel()
	ens, path, ctx, a, b := alphaBeta(t)
	ta, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := b.Campaign(bctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled Campaign = %v, want DeadlineExceeded", err)
	}
	onlyNode(t, ens, path, ta.Node(), "after the cancelled Campaign")
	if err := ta.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestObserveDeliversEveryChange: an observer sees every leader in order,
// with its node and token, including "no leader", and a slow reader still
// gets them all.
func TestObserveDeliversEveryChange(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, time.Minute)
	obs := newElection(t, open(t, ens.Servers()), path, "observer")
	octx, stop := context.WithCancel(ctx)
	changes := obs.Observe(octx)
	if got := <-changes; got != (election.Participant{}) {
		t.Fatalf("first observation %+v, want no leader", got)
	}
	ids := []string{"a", "b", "c", "d"}
	var cands []*election.Election
	for _, id := range ids {
		cands = append(cands, newElection(t, open(t, ens.Servers()), path, id))
	}
	// Each candidate campaigns once the one before leads, so they line up
	// in order; each resigns in turn. The observer reads nothing meanwhile.
	terms := make([]*election.Term, len(ids))
	var err error
	if terms[0], err = cands[0].Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	waiting := make([]chan *election.Term, len(ids))
	for i := 1; i < len(ids); i++ {
		waiting[i] = make(chan *election.Term, 1)
		go func() {
			tm, err := cands[i].Campaign(ctx)
			if err != nil {
				t.Error(err)
			}
			waiting[i] <- tm
		}()
		waitParticipants(t, ctx, obs, i+1)
	}
	for i := range ids {
		if i > 0 {
			terms[i] = <-waiting[i]
		}
		// Each term lasts until it can be seen: a leader whose term is
		// shorter than the observer's read can be missed (Observe's doc).
		// The observer's client reads it as leader, and then the
		// observer's own read has a margin.
		zktest.Eventually(t, 10*time.Second, "the observer's client reads "+ids[i]+" leading", func() error {
			l, err := obs.Leader(ctx)
			if err == nil && l != ids[i] {
				err = fmt.Errorf("leader %q", l)
			}
			return err
		})
		time.Sleep(300 * time.Millisecond)
		if err := terms[i].Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var got []election.Participant
	for len(got) < len(ids)+1 {
		select {
		case l := <-changes:
			got = append(got, l)
		case <-time.After(10 * time.Second):
			t.Fatalf("observed %+v, want %q then no leader", got, ids)
		}
	}
	for i, tm := range terms {
		l := got[i]
		if !l.Leader || l.ID != ids[i] || l.Node != tm.Node() || l.Token != tm.Token() {
			t.Errorf("observation %d = %+v, want %s leading on %s with token %d", i, l, ids[i], tm.Node(), tm.Token())
		}
	}
	if l := got[len(ids)]; l != (election.Participant{}) {
		t.Errorf("last observation %+v, want no leader", l)
	}
	stop()
	for range changes {
	}
}

// TestRunRequeues: Run gives fn the live term and a context that ends
// with it, resigns when fn returns, and with WithRequeue leads again.
func TestRunRequeues(t *testing.T) {
	t.Parallel()
	_, _, ctx, a, b := alphaBeta(t)

	// Without requeue: one term, fn's error returned.
	sentinel := errors.New("done")
	var given *election.Term
	err := a.Run(ctx, func(ctx context.Context, term *election.Term) error {
		given = term
		if id, err := b.Leader(ctx); err != nil || id != "alpha" {
			t.Errorf("Leader during Run = %q, %v", id, err)
		}
		ps, err := b.Participants(ctx)
		if err != nil || len(ps) == 0 || ps[0].Node != term.Node() || ps[0].Token != term.Token() {
			t.Errorf("Participants during Run = %+v, %v; want the leader's node %s, token %d", ps, err, term.Node(), term.Token())
		}
		select {
		case <-term.Done():
			t.Error("the term Run gave fn is over while fn runs")
		default:
		}
		return sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Fatalf("Run = %v, want fn's error", err)
	}
	select {
	case <-given.Done():
		if cause := context.Cause(given.Context()); !errors.Is(cause, election.ErrResigned) {
			t.Errorf("the term's cause after Run = %v, want ErrResigned", cause)
		}
	default:
		t.Error("the term Run gave fn is still open after Run returned")
	}
	// With requeue: alpha and beta take turns, each turn a new term with a
	// higher token.
	type turn struct {
		id    string
		token int64
	}
	rctx, stop := context.WithCancel(ctx)
	turns := make(chan turn, 100)
	run := func(e *election.Election) chan error {
		done := make(chan error, 1)
		go func() {
			done <- e.Run(rctx, func(ctx context.Context, term *election.Term) error {
				turns <- turn{e.ID(), term.Token()}
				time.Sleep(20 * time.Millisecond)
				return nil
			}, election.WithRequeue())
		}()
		return done
	}
	da, db := run(a), run(b)
	seen := map[string]int{}
	last := given.Token()
	for seen["alpha"] < 3 || seen["beta"] < 3 {
		select {
		case tn := <-turns:
			seen[tn.id]++
			if tn.token <= last {
				t.Errorf("%s's term has token %d after a term with %d", tn.id, tn.token, last)
			}
			last = tn.token
		case <-time.After(10 * time.Second):
			t.Fatalf("turns %v", seen)
		}
	}
	stop()
	for _, d := range []chan error{da, db} {
		if err := <-d; !errors.Is(err, context.Canceled) {
			t.Fatalf("requeued Run after cancel = %v, want Canceled", err)
		}
	}
}
