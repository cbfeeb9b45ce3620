package otelzk_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestHoldLostByACutEndsItsSpanAndCountsItLost: a cut that outlives the
// session ends the hold once, suspended; its span ends with that cause
// and an Error status, zkrecipes.hold.lost counts it once, and the
// session state follows the client through suspended and lost to
// reconnected in a new session, and to none once the client is closed.
func TestHoldLostByACutEndsItsSpanAndCountsItLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	tel := newTelemetry(t)
	rec := &testkit.Recorder{}
	c := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second),
		connection.WithObserver(tee(tel.observer, rec.Observer())))
	states := c.Listen(testkit.Ctx(t, 60*time.Second))
	ctx, caller := callerCtx(t, tel, 60*time.Second)
	path := root + "/lock"
	m := newMutex(t, c, path)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	session := hexID(c.Session().ID())
	node, token := m.Node(), m.Token()
	p.Cut()
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatal("the hold outlived the cut")
	}
	wantStates(t, tel, "map[zkrecipes.state=connected:0 zkrecipes.state=suspended:1]", "while cut off")
	testkit.WaitState(t, states, connection.Lost, 15*time.Second)
	wantStates(t, tel, "map[zkrecipes.state=connected:0 zkrecipes.state=lost:1 zkrecipes.state=suspended:0]", "after the loss")
	p.Restore()
	testkit.WaitState(t, states, connection.Reconnected, 15*time.Second)
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrLockLost) {
		t.Fatalf("Unlock of a lost hold: %v", err)
	}
	wantStates(t, tel, "map[zkrecipes.state=connected:0 zkrecipes.state=lost:0 zkrecipes.state=reconnected:1 zkrecipes.state=suspended:0]", "after the new session")
	c.Close()
	wantStates(t, tel, "map[zkrecipes.state=connected:0 zkrecipes.state=lost:0 zkrecipes.state=reconnected:0 zkrecipes.state=suspended:0]", "after the close")

	holds := rec.Holds()
	testkit.OnceEnded(t, "hold", holds)
	if len(holds) != 1 {
		t.Fatalf("the observer heard holds %+v, want one", holds)
	}
	cause := holds[0].Ends[0].Cause
	spans := tel.spansNamed("hold")
	if len(spans) != 1 {
		t.Fatalf("%d hold spans, want one", len(spans))
	}
	wantSpan(t, spans[0], "mutex hold", trace.SpanKindInternal, caller, codes.Error, map[string]string{
		"zkrecipes.recipe": "mutex", "zkrecipes.path": path, "zkrecipes.participant": node,
		"zkrecipes.token": fmt.Sprint(token), "zookeeper.session.id": session, "zkrecipes.cause": "suspended",
	})
	if d := spans[0].Status().Description; cause == nil || d != cause.Error() {
		t.Errorf("the hold span's status says %q, the hold's cause is %v", d, cause)
	}
	if got := tel.sum(t, "zkrecipes.hold.lost", "{hold}", true); fmt.Sprint(got) != "map[zkrecipes.cause=suspended,zkrecipes.recipe=mutex:1]" {
		t.Errorf("holds lost %v, want one mutex hold lost, suspended", got)
	}
	if got := tel.sum(t, "zkrecipes.hold.active", "{hold}", false); fmt.Sprint(got) != "map[zkrecipes.recipe=mutex:0]" {
		t.Errorf("holds active after the loss: %v, want none", got)
	}
	if got := tel.histogram(t, "zkrecipes.hold.duration", "s"); fmt.Sprint(got) != "map[zkrecipes.cause=suspended,zkrecipes.recipe=mutex:1]" {
		t.Errorf("hold durations %v, want one mutex hold lost, suspended", got)
	}
	if waits := tel.spansNamed("wait"); len(waits) != 0 {
		t.Errorf("%d wait spans, want none (the lock was free)", len(waits))
	}
	wantRequestSpans(t, tel, rec, caller, trace.SpanContext{})
}

// wantStates waits until zkrecipes.session.state, written as fmt prints
// its values by attribute set, is want: the observer is told of a state
// change as Listen delivers it, not before the hold ends.
func wantStates(t *testing.T, tel *telemetry, want, when string) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, "session states "+when+": "+want, func() error {
		if got := fmt.Sprint(tel.sum(t, "zkrecipes.session.state", "{client}", false)); got != want {
			return errors.New(got)
		}
		return nil
	})
}
