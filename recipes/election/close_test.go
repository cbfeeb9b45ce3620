package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

// TestCloseEndsTermObserversAndUse: Close resigns the live term (Done
// closed with ErrResigned, the node gone, the next candidate leads),
// closes every Observe channel and ends every goroutine the Election
// started; every later use fails with ErrClosed, and a second Close is
// nil.
func TestCloseEndsTermObserversAndUse(t *testing.T) {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, time.Minute)
	ca, cb := open(t, ens.Servers()), open(t, ens.Servers())
	a := newElection(t, ca, path, "alpha")
	b := newElection(t, cb, path, "beta")
	raw := ens.Conn(t)
	before := goleak.IgnoreCurrent()

	ta, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obs := a.Observe(ctx)
	if l := <-obs; l.ID != "alpha" || !l.Leader {
		t.Fatalf("observed %+v, want alpha leading", l)
	}
	won := campaignLater(t, ctx, b)
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if !closed(ta.Done()) {
		t.Fatal("the term's Done is open after Close")
	}
	if cause := context.Cause(ta.Context()); !errors.Is(cause, election.ErrResigned) {
		t.Errorf("the term's cause after Close = %v, want ErrResigned", cause)
	}
	for range obs { // the channel closes; values sent before may come first
	}
	if ok, _, err := raw.Exists(ta.Node()); err != nil || ok {
		t.Errorf("the term's node after Close: exists %v, %v", ok, err)
	}
	var tb *election.Term
	select {
	case tb = <-won:
	case <-time.After(20 * time.Second):
		t.Fatal("beta does not lead after alpha's Close")
	}
	// Everything the Election started has ended: what runs now was
	// running before the campaign, apart from beta's waiting candidacy,
	// which has returned.
	testkit.VerifyNoGoroutinesSince(t, before)

	if _, err := a.Campaign(ctx); !errors.Is(err, election.ErrClosed) {
		t.Errorf("Campaign after Close = %v, want ErrClosed", err)
	}
	ran := false
	if err := a.Run(ctx, func(context.Context, *election.Term) error { ran = true; return nil }); !errors.Is(err, election.ErrClosed) || ran {
		t.Errorf("Run after Close = %v (fn ran: %v), want ErrClosed", err, ran)
	}
	if _, err := a.Leader(ctx); !errors.Is(err, election.ErrClosed) {
		t.Errorf("Leader after Close = %v, want ErrClosed", err)
	}
	if _, err := a.Participants(ctx); !errors.Is(err, election.ErrClosed) {
		t.Errorf("Participants after Close = %v, want ErrClosed", err)
	}
	if _, ok := <-a.Observe(ctx); ok {
		t.Error("Observe after Close delivered a value")
	}
	if err := ta.Resign(ctx); !errors.Is(err, election.ErrResigned) {
		t.Errorf("Resign of the term Close resigned = %v, want ErrResigned", err)
	}
	if err := a.Close(ctx); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := tb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCloseEndsCampaignInProgress: a candidate waiting in line when its
// Election is closed stops with ErrClosed, and its node is gone before
// Close returns.
func TestCloseEndsCampaignInProgress(t *testing.T) {
	t.Parallel()
	ens, path, ctx, a, b := alphaBeta(t)
	ta, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	campaign := make(chan error, 1)
	go func() {
		_, err := b.Campaign(ctx)
		campaign <- err
	}()
	waitParticipants(t, ctx, a, 2)
	if err := b.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	select {
	case err := <-campaign:
		if !errors.Is(err, election.ErrClosed) {
			t.Fatalf("Campaign ended by Close = %v, want ErrClosed", err)
		}
	default:
		t.Fatal("Campaign still runs after Close returned")
	}
	onlyNode(t, ens, path, ta.Node(), "after Close")
	if err := ta.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCloseEndsRun: Close during Run cancels fn's context with
// ErrResigned, resigns the term, and Run returns ErrClosed — with or
// without WithRequeue.
func TestCloseEndsRun(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ctx := ctxFor(t, time.Minute)
	for _, requeue := range []bool{false, true} {
		path := ens.Root(t) + "/election"
		if requeue {
			path += "-requeue"
		}
		e := newElection(t, open(t, ens.Servers()), path, "alpha")
		var opts []election.RunOption
		if requeue {
			opts = append(opts, election.WithRequeue())
		}
		leading := make(chan *election.Term, 1)
		cause := make(chan error, 1)
		ran := make(chan error, 1)
		go func() {
			ran <- e.Run(ctx, func(fctx context.Context, term *election.Term) error {
				leading <- term
				<-fctx.Done()
				cause <- context.Cause(fctx)
				return nil
			}, opts...)
		}()
		term := <-leading
		if err := e.Close(ctx); err != nil {
			t.Fatalf("requeue %v: Close = %v", requeue, err)
		}
		if err := <-ran; !errors.Is(err, election.ErrClosed) {
			t.Errorf("requeue %v: Run ended by Close = %v, want ErrClosed", requeue, err)
		}
		if err := <-cause; !errors.Is(err, election.ErrResigned) {
			t.Errorf("requeue %v: fn's context cause = %v, want ErrResigned", requeue, err)
		}
		if ok, _, err := ens.Conn(t).Exists(term.Node()); err != nil || ok {
			t.Errorf("requeue %v: the term's node after Close: exists %v, %v", requeue, ok, err)
		}
	}
}

// TestRunOptionThatFailsStopsRun: an option's error is Run's, before any
// campaign: fn never runs and no node is made.
func TestRunOptionThatFailsStopsRun(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, time.Minute)
	e := newElection(t, open(t, ens.Servers()), path, "alpha")
	ran := false
	err := e.Run(ctx, func(context.Context, *election.Term) error { ran = true; return nil },
		election.FailingRunOption(connection.ErrInvalidOption))
	if !errors.Is(err, connection.ErrInvalidOption) || ran {
		t.Fatalf("Run with a failing option = %v (fn ran: %v), want ErrInvalidOption", err, ran)
	}
	if ok, _, err := ens.Conn(t).Exists(path); err != nil || ok {
		t.Fatalf("the election's path after a refused Run: exists %v, %v", ok, err)
	}
}
