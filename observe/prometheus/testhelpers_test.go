package zkprom

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/zkrecipes/zkrecipes/connection"
)

// told counts what an observer was told, as the adapter's series should
// show it: the expected values of a test.
type told struct {
	mu       sync.Mutex
	requests map[string]int // "op,result" of each request ended
	begun    int            // requests begun
	states   []connection.State
	waits    map[string]int // "recipe,result"
	waiting  int            // waits begun
	holds    map[string]int // recipe: holds begun
	ends     map[string]int // recipe: holds ended
	lost     map[string]int // "cause,recipe"
}

func newTold() *told {
	return &told{requests: map[string]int{}, waits: map[string]int{}, holds: map[string]int{}, ends: map[string]int{}, lost: map[string]int{}}
}

// tee returns an observer that tells both the adapter's a and t's
// counting of the same events.
func (t *told) tee(a *connection.Observer) *connection.Observer {
	return &connection.Observer{
		Request: func(ctx context.Context, r connection.Request) func(connection.RequestDone) {
			t.mu.Lock()
			t.begun++
			t.mu.Unlock()
			done := a.Request(ctx, r)
			return func(d connection.RequestDone) {
				done(d)
				t.mu.Lock()
				t.requests[r.Op+","+result(d.Err)]++
				t.mu.Unlock()
			}
		},
		Notification: a.Notification,
		StateChange: func(s connection.StateChange) {
			a.StateChange(s)
			t.mu.Lock()
			t.states = append(t.states, s.State)
			t.mu.Unlock()
		},
		Wait: func(ctx context.Context, w connection.Wait) (context.Context, func(connection.WaitDone)) {
			ctx, done := a.Wait(ctx, w)
			t.mu.Lock()
			t.waiting++
			t.mu.Unlock()
			return ctx, func(d connection.WaitDone) {
				done(d)
				t.mu.Lock()
				t.waits[w.Recipe+","+waitResult(d.Err)]++
				t.mu.Unlock()
			}
		},
		Hold: func(ctx context.Context, h connection.Hold) func(connection.HoldDone) {
			done := a.Hold(ctx, h)
			t.mu.Lock()
			t.holds[h.Recipe]++
			t.mu.Unlock()
			return func(d connection.HoldDone) {
				done(d)
				t.mu.Lock()
				t.ends[h.Recipe]++
				if d.Cause != nil {
					t.lost[lostCause(d.Cause)+","+h.Recipe]++
				}
				t.mu.Unlock()
			}
		},
		View:           a.View,
		Closed:         a.Closed,
		CounterOutcome: a.CounterOutcome,
	}
}

// series returns the series of the metric family name gathered from reg,
// keyed by their variable labels' values joined with "," in the order of
// the labels' names (the constant label client left out), with the gauge's or
// counter's value, or a histogram's sample count.
func series(t testing.TB, reg prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[key(m)] = value(m)
		}
	}
	return out
}

func key(m *dto.Metric) string {
	var vs []string
	for _, l := range m.GetLabel() {
		if l.GetName() != "client" {
			vs = append(vs, l.GetValue())
		}
	}
	return strings.Join(vs, ",")
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// counts turns a tally into series values.
func counts(m map[string]int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}

// wantSeries fails t unless the family's series are exactly want.
func wantSeries(t testing.TB, reg prometheus.Gatherer, name string, want map[string]float64) {
	t.Helper()
	if got := series(t, reg, name); fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Errorf("%s: series %v, want %v", name, sorted(got), sorted(want))
	}
}

func sorted(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("{%s}=%g", k, v))
	}
	sort.Strings(out)
	return out
}

// eventually waits up to d for the family's series to be exactly want.
func eventually(t testing.TB, reg prometheus.Gatherer, name string, want map[string]float64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for fmt.Sprint(sorted(series(t, reg, name))) != fmt.Sprint(sorted(want)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	wantSeries(t, reg, name, want)
}

// stateSeries is zkrecipes_session_state with cur the current state
// (0: none).
func stateSeries(cur connection.State) map[string]float64 {
	out := map[string]float64{}
	for _, s := range states {
		out[s.String()] = 0
	}
	if cur != 0 {
		out[cur.String()] = 1
	}
	return out
}
