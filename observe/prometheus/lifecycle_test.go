package zkprom

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zkrecipes/zkrecipes/connection"
	zkshared "github.com/zkrecipes/zkrecipes/recipes/shared"
)

// TestClosedClientIsInNoState: once the client is closed, every
// zkrecipes_session_state series is 0, and no state change was counted
// for the close.
func TestClosedClientIsInNoState(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c, reg, _ := observed(t, ens.Servers())
	// Connected is told as Listen delivers it, which may be after Open
	// returns; the close is told before Close returns.
	eventually(t, reg, "zkrecipes_session_state", stateSeries(connection.Connected), 10*time.Second)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, reg, "zkrecipes_session_state", stateSeries(0))
	wantSeries(t, reg, "zkrecipes_session_changes_total", map[string]float64{"CONNECTED": 1})
}

// TestNotificationWatchAgeIsRecorded: a data watch set, then its node
// changed after a pause, is one observation of its type, of at least the
// pause and at most the time from before the read to the notification.
func TestNotificationWatchAgeIsRecorded(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c, reg, _ := observed(t, ens.Servers())
	ctx := testCtx(t)
	n := root + "/n"
	if _, err := c.Create(ctx, n, nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	const pause = 300 * time.Millisecond
	before := time.Now()
	_, _, w, err := c.GetWatch(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	if _, err := ens.Conn(t).Set(n, []byte("v"), -1); err != nil {
		t.Fatal(err)
	}
	<-w.Done()
	within := time.Since(before)
	wantSeries(t, reg, "zkrecipes_notification_watch_age_seconds", map[string]float64{"node_data_changed": 1})
	if sum := histogramSum(t, reg, "zkrecipes_notification_watch_age_seconds"); sum < pause.Seconds() || sum > within.Seconds() {
		t.Errorf("watch age %gs, want between %v and %v", sum, pause, within)
	}
}

// histogramSum is the sum of the samples of the family name's one series.
func histogramSum(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	t.Fatalf("%s: not one series", name)
	return 0
}

// TestCounterLostAnswerSettledIsCounted: a counter's add whose answer the
// link drops (it applied) is settled by the marker's read once the link is
// back: one "applied" outcome, the others 0, and the add succeeded once.
func TestCounterLostAnswerSettledIsCounted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	reg := prometheus.NewRegistry()
	obs, err := NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	var armed, dropped, restored atomic.Bool
	// The link drops the answers from the counter's first write (a
	// multi) on, and is restored once that write has failed.
	hooked := *obs
	hooked.Request = func(ctx context.Context, r connection.Request) func(connection.RequestDone) {
		done := obs.Request(ctx, r)
		if r.Op != "multi" || !armed.Load() || !dropped.CompareAndSwap(false, true) {
			return done
		}
		p.DropReplies()
		return func(d connection.RequestDone) {
			done(d)
			if errors.Is(d.Err, zk.ErrConnectionClosed) && restored.CompareAndSwap(false, true) {
				go p.Restore()
			}
		}
	}
	ctx := testCtx(t)
	c, err := connection.Open(ctx, p.Servers(), connection.WithSessionTimeout(6*time.Second), connection.WithObserver(&hooked))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cn, err := zkshared.NewCounter(c, root+"/c")
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close(ctx)
	if _, err := cn.Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	res, err := cn.Add(ctx, 10)
	if err != nil || !res.Succeeded || res.Post != 11 || res.OptimisticTries != 1 {
		t.Fatalf("add whose answer was dropped: %+v, %v; want applied once", res, err)
	}
	const want = `
# HELP zkrecipes_counter_outcomes_total Shared counters' writes whose answer was lost, by what the counter learnt: applied, not_applied (settled by its marker's read), unknown.
# TYPE zkrecipes_counter_outcomes_total counter
zkrecipes_counter_outcomes_total{outcome="applied"} 1
zkrecipes_counter_outcomes_total{outcome="not_applied"} 0
zkrecipes_counter_outcomes_total{outcome="unknown"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "zkrecipes_counter_outcomes_total"); err != nil {
		t.Error(err)
	}
}

// TestCounterOutcomeLabels: settled and applied, settled and not applied,
// and unknown each count under their own outcome.
func TestCounterOutcomeLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o.CounterOutcome(ctx, connection.CounterOutcome{Path: "/c", Settled: true, Applied: true})
	o.CounterOutcome(ctx, connection.CounterOutcome{Path: "/c", Settled: true})
	o.CounterOutcome(ctx, connection.CounterOutcome{Path: "/c", Settled: true})
	o.CounterOutcome(ctx, connection.CounterOutcome{Path: "/c", Err: connection.ErrOutcomeUnknown})
	wantSeries(t, reg, "zkrecipes_counter_outcomes_total", map[string]float64{"applied": 1, "not_applied": 2, "unknown": 1})
}

// TestUnregisteredObserverLeavesTheRegistry: RegisterObserver's
// unregister takes the client's series off the registry (a second call
// reports nothing left to take), and an observer with the same constant
// labels can then be registered for the next client.
func TestUnregisteredObserverLeavesTheRegistry(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	reg := prometheus.NewRegistry()
	labels := WithConstLabels(prometheus.Labels{"client": "orders"})
	for round := range 2 {
		obs, unregister, err := RegisterObserver(reg, labels)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		ctx := testCtx(t)
		c, err := connection.Open(ctx, ens.Servers(), connection.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		wantSeries(t, reg, "zkrecipes_session_state", stateSeries(connection.Connected))
		c.Close()
		if !unregister() {
			t.Errorf("round %d: unregister found nothing registered", round)
		}
		if unregister() {
			t.Errorf("round %d: a second unregister found something registered", round)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if len(mfs) != 0 {
			t.Fatalf("round %d: %d metric families left after unregister", round, len(mfs))
		}
	}
	if _, _, err := RegisterObserver(nil); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("RegisterObserver(nil): %v, want ErrInvalidOption", err)
	}
}
