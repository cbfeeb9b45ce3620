package otelzk_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	otelzk "github.com/zkrecipes/zkrecipes/observe/otel"
	zkshared "github.com/zkrecipes/zkrecipes/recipes/shared"
)

// TestClosedClientLeavesTheSessionStateCount: a client counts in its
// state while open, and in none once closed.
func TestClosedClientLeavesTheSessionStateCount(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	tel := newTelemetry(t)
	c, err := connection.Open(testkit.Ctx(t, 20*time.Second), ens.Servers(), connection.WithObserver(tel.observer))
	if err != nil {
		t.Fatal(err)
	}
	// Connected is told as Listen delivers it, which may be after Open
	// returns; the close is told before Close returns.
	wantStates(t, tel, "map[zkrecipes.state=connected:1]", "once open")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := tel.sum(t, "zkrecipes.session.state", "{client}", false); fmt.Sprint(got) != "map[zkrecipes.state=connected:0]" {
		t.Errorf("clients by state after the close %v, want none", got)
	}
}

// TestNotificationWatchAgeIsRecorded: a data watch set, then its node
// changed after a pause, is one measurement of its type, of at least the
// pause and at most the time from before the read to the notification.
func TestNotificationWatchAgeIsRecorded(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	tel := newTelemetry(t)
	c := testkit.Open(t, ens.Servers(), connection.WithObserver(tel.observer))
	ctx := testkit.Ctx(t, 20*time.Second)
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
	if got := tel.histogram(t, "zkrecipes.notification.watch_age", "s"); fmt.Sprint(got) != "map[zookeeper.event.type=node_data_changed:1]" {
		t.Fatalf("watch ages %v, want one of a data change", got)
	}
	m, _ := tel.metric(t, "zkrecipes.notification.watch_age")
	if sum := m.Data.(metricdata.Histogram[float64]).DataPoints[0].Sum; sum < pause.Seconds() || sum > within.Seconds() {
		t.Errorf("watch age %gs, want between %v and %v", sum, pause, within)
	}
}

// TestCounterLostAnswerSettledIsCountedApplied: a counter's add whose
// answer the link drops (it applied) is settled by the marker's read once
// the link is back: one "applied" outcome, and the add succeeded once.
func TestCounterLostAnswerSettledIsCountedApplied(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	tel := newTelemetry(t)
	var armed, dropped, restored atomic.Bool
	// The link drops the answers from the counter's next write (a multi)
	// on, and is restored once that write has failed.
	hooked := *tel.observer
	hooked.Request = func(ctx context.Context, r connection.Request) func(connection.RequestDone) {
		done := tel.observer.Request(ctx, r)
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
	c := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second), connection.WithObserver(&hooked))
	ctx := testkit.Ctx(t, time.Minute)
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
	if got := tel.sum(t, "zkrecipes.counter.outcomes", "{write}", true); fmt.Sprint(got) != "map[zkrecipes.outcome=applied:1]" {
		t.Errorf("counter outcomes %v, want one applied", got)
	}
}

// TestCounterOutcomesAreNamed: settled and applied, settled and not
// applied, and unknown each count under their own zkrecipes.outcome.
func TestCounterOutcomesAreNamed(t *testing.T) {
	tel := newTelemetry(t)
	ctx := context.Background()
	tel.observer.CounterOutcome(ctx, connection.CounterOutcome{Path: "/c", Settled: true, Applied: true})
	tel.observer.CounterOutcome(ctx, connection.CounterOutcome{Path: "/c", Settled: true})
	tel.observer.CounterOutcome(ctx, connection.CounterOutcome{Path: "/c", Settled: true})
	tel.observer.CounterOutcome(ctx, connection.CounterOutcome{Path: "/c", Err: connection.ErrOutcomeUnknown})
	want := "map[zkrecipes.outcome=applied:1 zkrecipes.outcome=not_applied:2 zkrecipes.outcome=unknown:1]"
	if got := tel.sum(t, "zkrecipes.counter.outcomes", "{write}", true); fmt.Sprint(got) != want {
		t.Errorf("counter outcomes %v, want %s", got, want)
	}
}

// TestNewRefusesNilOptionsAndProviders: New refuses a nil option, tracer
// provider or meter provider with ErrInvalidOption, and takes valid
// ones; NewObserver keeps the global providers for the same nil ones.
func TestNewRefusesNilOptionsAndProviders(t *testing.T) {
	for name, opt := range map[string]otelzk.Option{
		"nil option":         nil,
		"nil TracerProvider": otelzk.WithTracerProvider(nil),
		"nil MeterProvider":  otelzk.WithMeterProvider(nil),
	} {
		if o, err := otelzk.New(opt); !errors.Is(err, otelzk.ErrInvalidOption) || o != nil {
			t.Errorf("New with a %s: %v, %v; want ErrInvalidOption", name, o, err)
		}
		if o := otelzk.NewObserver(opt); o == nil || o.Request == nil {
			t.Errorf("NewObserver with a %s: %v, want an observer of the global providers", name, o)
		}
	}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	if o, err := otelzk.New(otelzk.WithTracerProvider(tp)); err != nil || o == nil || o.Closed == nil || o.CounterOutcome == nil {
		t.Errorf("New with a provider: %v, %v", o, err)
	}
}
