package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// waitsBegun waits until rec has recorded n waits.
func waitsBegun(t *testing.T, rec *testkit.Recorder, n int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d waits begun", n), func() error {
		if got := len(rec.Waits()); got != n {
			return fmt.Errorf("%d waits", got)
		}
		return nil
	})
}

func TestObserverHearsWaitsAndHoldsOfParticipantsOfOneClient(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	other := ens.Conn(t)
	ctx := context.WithValue(ctxFor(t, 30*time.Second), testkit.CtxKey{}, "caller")
	path := root + "/lock"
	a, b, d, e := newLock(t, c, path), newLock(t, c, path), newLock(t, c, path), newLock(t, c, path)

	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 2)
	go func() { locked <- b.Lock(ctx) }()
	waitsBegun(t, rec, 1)
	go func() { locked <- d.Lock(ctx) }()
	waitsBegun(t, rec, 2)
	if err := e.TryLock(ctx); !errors.Is(err, errLocked) {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	// A change of the holder's data wakes its successor, which watches it
	// again with a read: a request of the wait, with the wait's context.
	spA := a.Node()
	if _, err := other.Set(spA, []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the waiter's read of the holder's node", func() error {
		for _, r := range rec.Requests() {
			if r.Begin.Path == spA && r.Begin.Op == "getData" && r.CtxVal == testkit.WaitCtxVal {
				return nil
			}
		}
		return errors.New("none under the wait's context")
	})

	// The line is served in order: a, then b, then d.
	var nodes []string
	for _, l := range []*testLock{a, b, d} {
		if l != a {
			if err := <-locked; err != nil {
				t.Fatal(err)
			}
		}
		if !l.Held() {
			t.Fatalf("participant %d does not hold in its turn", len(nodes))
		}
		nodes = append(nodes, l.Node())
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	nodeB, nodeD := nodes[1], nodes[2]

	waits, holds := rec.Waits(), rec.Holds()
	testkit.OnceEnded(t, "wait", waits)
	testkit.OnceEnded(t, "hold", holds)
	if len(waits) != 2 || len(holds) != 3 {
		t.Fatalf("%d waits and %d holds, want 2 and 3 (the TryLock that would wait is neither)", len(waits), len(holds))
	}
	for i, w := range []struct {
		node  string
		ahead int
	}{{nodeB, 1}, {nodeD, 2}} {
		g := waits[i]
		if g.Begin.Recipe != "lock" || g.Begin.Path != path || g.Begin.Participant != w.node || g.Begin.Ahead != w.ahead || g.CtxVal != "caller" {
			t.Errorf("wait %d = %+v (ctx value %v), want lock %s of %s with %d ahead, the caller's context", i, g.Begin, g.CtxVal, path, w.node, w.ahead)
		}
		if g.Ends[0].Err != nil {
			t.Errorf("wait %d ended with %v, want its turn", i, g.Ends[0].Err)
		}
	}
	id := c.Session().ID()
	for i, node := range nodes {
		g := holds[i]
		if g.Begin.Recipe != "lock" || g.Begin.Path != path || g.Begin.Participant != node || g.Begin.Token == 0 || g.Begin.SessionID != id || g.CtxVal != "caller" {
			t.Errorf("hold %d = %+v (ctx value %v), want lock %s of %s in session %#x with a token", i, g.Begin, g.CtxVal, path, node, id)
		}
		if g.Ends[0].Cause != nil {
			t.Errorf("hold %d ended with %v, want released", i, g.Ends[0].Cause)
		}
	}
}

func TestObserverHearsCancelledWaitEndWithContextError(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, 30*time.Second)
	a, b := newLock(t, c, root+"/lock"), newLock(t, c, root+"/lock")
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(ctx)
	locked := make(chan error, 1)
	go func() { locked <- b.Lock(bctx) }()
	waitsBegun(t, rec, 1)
	cancel()
	if err := <-locked; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with its context cancelled: %v", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	waits := rec.Waits()
	testkit.OnceEnded(t, "wait", waits)
	if len(waits) != 1 || !errors.Is(waits[0].Ends[0].Err, context.Canceled) {
		t.Fatalf("waits %+v, want one ended by its context", waits)
	}
	if holds := rec.Holds(); len(holds) != 1 {
		t.Fatalf("holds %+v, want the first participant's alone", holds)
	}
}

func TestObserverHearsOneEndOfAHoldLostByACut(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second), connection.WithObserver(rec.Observer()))
	states := c.Listen(ctxFor(t, 60*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	l := newLock(t, c, root+"/lock")
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done := l.Done()
	p.Cut()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the hold outlived the cut")
	}
	// The session is lost too, later: the hold ended once, suspended.
	testkit.WaitState(t, states, connection.Lost, 15*time.Second)
	p.Restore()
	if err := l.Unlock(ctx); !errors.Is(err, errLockLost) {
		t.Fatalf("Unlock of a lost hold: %v", err)
	}
	holds := rec.Holds()
	testkit.OnceEnded(t, "hold", holds)
	if len(holds) != 1 {
		t.Fatalf("holds %+v, want one", holds)
	}
	cause := holds[0].Ends[0].Cause
	if !errors.Is(cause, connection.ErrSuspended) || !errors.Is(cause, errLockLost) || errors.Is(cause, connection.ErrSessionLost) {
		t.Fatalf("hold ended with %v, want lost: suspended", cause)
	}
	if hc := l.Err(); hc == nil || hc.Error() != cause.Error() {
		t.Errorf("the hold's own cause %v, the observer's %v: want the same", hc, cause)
	}
}
