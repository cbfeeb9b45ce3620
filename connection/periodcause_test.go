package connection_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// periodCause is why the connected period ctx ended: context.Cause, once
// it has.
func periodCause(t *testing.T, period context.Context) error {
	t.Helper()
	select {
	case <-period.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the trusted period did not end")
	}
	return context.Cause(period)
}

// TestSuspensionEndsThePeriodWithErrSuspended: under the standard policy a
// blackhole shorter than the session timeout ends the trusted period with
// a cause that matches ErrSuspended and not ErrSessionLost — the server
// still holds the session, and the same session comes back — while the period of a session the server expires
// (session policy: no suspension ends it first) ends with the session's
// own error, ErrSessionLost.
func TestSuspensionEndsThePeriodWithErrSuspended(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := ctxFor(t, time.Minute)
	sess := c.Session()
	states := c.Listen(ctx)
	period, err := sess.Trusted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The server holds the session until it expires it, a third of the
	// timeout after the client's suspension at the earliest.
	p.Blackhole()
	expect(t, states, 10*time.Second, connection.Suspended)
	why := periodCause(t, period)
	if !errors.Is(why, connection.ErrSuspended) || errors.Is(why, connection.ErrSessionLost) {
		t.Fatalf("period ended with %v, want ErrSuspended and not ErrSessionLost", why)
	}
	if !testkit.ServerHasSession(t, ens, sess.ID()) || sess.Err() != nil {
		t.Fatalf("session %#x: held by the server %v, Err %v; want a live session", sess.ID(), testkit.ServerHasSession(t, ens, sess.ID()), sess.Err())
	}
	p.Restore()
	expect(t, states, 10*time.Second, connection.Reconnected)
	if c.Session() != sess {
		t.Fatal("a short blackhole changed the session")
	}
	// The suspension's cause stays the period's; the next period is a new
	// context with its own.
	if why2 := context.Cause(period); why2 != why {
		t.Fatalf("the ended period's cause changed: %v, then %v", why, why2)
	}
	if period2, err := sess.Trusted(ctx); err != nil || period2.Err() != nil {
		t.Fatalf("the period after RECONNECTED: %v, %v", period2, err)
	}

	sp := ens.Proxy(t)
	sc := open(t, sp.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	ssess := sc.Session()
	speriod, err := ssess.Trusted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	why = periodCause(t, speriod)
	if !errors.Is(why, connection.ErrSessionLost) || errors.Is(why, connection.ErrSuspended) {
		t.Fatalf("session policy: the period of an expired session ended with %v, want ErrSessionLost and not ErrSuspended", why)
	}
	if why != ssess.Err() {
		t.Fatalf("the period's cause %v is not the session's error %v", why, ssess.Err())
	}
}

// TestClosedClientEndsThePeriodWithErrClosed: Close ends the trusted
// period with the session's error, which matches ErrSessionLost and
// ErrClosed.
func TestClosedClientEndsThePeriodWithErrClosed(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c, err := connection.Open(ctxFor(t, 30*time.Second), ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	sess := c.Session()
	period, err := sess.Trusted(ctxFor(t, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	why := periodCause(t, period)
	if !errors.Is(why, connection.ErrClosed) || !errors.Is(why, connection.ErrSessionLost) || errors.Is(why, connection.ErrSuspended) {
		t.Fatalf("the period of a closed client ended with %v, want ErrClosed and ErrSessionLost", why)
	}
}
