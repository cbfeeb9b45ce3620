package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

// TestRunSaysTheTermWasSuspended: under the standard policy a leader's
// connection is blackholed for less than its session timeout. Run's
// function sees its context cancelled with the term's cause, and Run
// returns it: ErrTermLost and connection.ErrSuspended, not
// connection.ErrSessionLost — the server still holds the session. The
// message says what happened.
func TestRunSaysTheTermWasSuspended(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	e := newElection(t, c, ens.Root(t)+"/e", "a")
	ctx := ctxFor(t, time.Minute)
	sess := c.Session()
	var (
		term   *election.Term
		fnWhy  error
		listed bool
	)
	err := e.Run(ctx, func(fctx context.Context, tm *election.Term) error {
		term = tm
		p.Blackhole()
		<-fctx.Done()
		fnWhy = context.Cause(fctx)
		listed = testkit.ServerHasSession(t, ens, sess.ID())
		return nil
	})
	p.Restore()
	if !listed || sess.Err() != nil {
		t.Fatalf("session %#x when the term ended: held by the server %v, Err %v; want it alive", sess.ID(), listed, sess.Err())
	}
	for what, got := range map[string]error{"Run's error": err, "fn's context cause": fnWhy, "Term.Err": term.Err()} {
		if !errors.Is(got, election.ErrTermLost) || !errors.Is(got, connection.ErrSuspended) || errors.Is(got, connection.ErrSessionLost) {
			t.Errorf("%s = %v, want ErrTermLost and ErrSuspended, not ErrSessionLost", what, got)
		}
	}
	if term.Err() != fnWhy {
		t.Errorf("Term.Err %v, fn's context cause %v: want one error", term.Err(), fnWhy)
	}
	t.Logf("Run: %v", err)
}

// TestTermUnderSessionPolicyOutlivesACutAndSaysSessionLost: under the
// session policy a short cut ends no term — Err stays nil through
// SUSPENDED and RECONNECTED — and the expiry of the session later ends it
// with connection.ErrSessionLost, its one cause, not ErrSuspended.
func TestTermUnderSessionPolicyOutlivesACutAndSaysSessionLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	e := newElection(t, c, ens.Root(t)+"/e", "a")
	ctx := ctxFor(t, time.Minute)
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctx)
	p.Cut()
	testkit.WaitState(t, states, connection.Suspended, 10*time.Second)
	p.Restore()
	testkit.WaitState(t, states, connection.Reconnected, 15*time.Second)
	if err := term.Err(); err != nil || closed(term.Done()) {
		t.Fatalf("session policy: the term ended with a short cut: %v", err)
	}
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-term.Done():
	case <-ctx.Done():
		t.Fatal("the term outlived its expired session")
	}
	why := term.Err()
	if !errors.Is(why, election.ErrTermLost) || !errors.Is(why, connection.ErrSessionLost) || errors.Is(why, connection.ErrSuspended) {
		t.Fatalf("Term.Err after the expiry = %v, want ErrTermLost and ErrSessionLost, not ErrSuspended", why)
	}
	if err := term.Resign(ctx); !errors.Is(err, connection.ErrSessionLost) || errors.Is(err, connection.ErrSuspended) {
		t.Fatalf("Resign of the expired term = %v, want its cause", err)
	}
	if term.Err() != why {
		t.Fatalf("Term.Err changed after Resign: %v, then %v", why, term.Err())
	}
}
