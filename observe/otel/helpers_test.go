package otelzk_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zkrecipes/zkrecipes/connection"
	otelzk "github.com/zkrecipes/zkrecipes/observe/otel"
)

// telemetry is what an observer under test records into: OpenTelemetry's
// in-memory span recorder and manual metric reader.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	// observer is the adapter under test, recording into the above.
	observer *connection.Observer
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel.observer = otelzk.NewObserver(otelzk.WithTracerProvider(tel.tp), otelzk.WithMeterProvider(mp))
	return tel
}

// metric returns the metric of that name the reader collects now, and
// whether there is one.
func (tel *telemetry) metric(t *testing.T, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelzk.ScopeName {
			t.Errorf("metrics of scope %q, want %q", sm.Scope.Name, otelzk.ScopeName)
		}
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// histogram returns the counts of the histogram name by attribute set
// (setKey), and checks its unit.
func (tel *telemetry) histogram(t *testing.T, name, unit string) map[string]uint64 {
	t.Helper()
	counts := map[string]uint64{}
	m, ok := tel.metric(t, name)
	if !ok {
		return counts
	}
	if m.Unit != unit {
		t.Errorf("%s in %q, want %q", name, m.Unit, unit)
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, want a float64 histogram", name, m.Data)
	}
	for _, p := range h.DataPoints {
		counts[setKey(p.Attributes)] += p.Count
	}
	return counts
}

// sum returns the values of the counter or up-down counter name by
// attribute set (setKey), and checks its unit and monotonicity.
func (tel *telemetry) sum(t *testing.T, name, unit string, monotonic bool) map[string]int64 {
	t.Helper()
	values := map[string]int64{}
	m, ok := tel.metric(t, name)
	if !ok {
		return values
	}
	if m.Unit != unit {
		t.Errorf("%s in %q, want %q", name, m.Unit, unit)
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, want an int64 sum", name, m.Data)
	}
	if s.IsMonotonic != monotonic {
		t.Errorf("%s monotonic = %v, want %v", name, s.IsMonotonic, monotonic)
	}
	for _, p := range s.DataPoints {
		values[setKey(p.Attributes)] += p.Value
	}
	return values
}

// setKey writes an attribute set as its sorted key=value pairs.
func setKey(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// attrs returns a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// spansNamed returns the ended spans whose name has the suffix.
func (tel *telemetry) spansNamed(suffix string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if strings.HasSuffix(s.Name(), suffix) {
			out = append(out, s)
		}
	}
	return out
}

// tee is an observer that tells a, then b, of every event: the adapter
// under test beside a testkit.Recorder that says what happened. b's
// beginnings are given the contexts a's return, so that b sees a's spans.
func tee(a, b *connection.Observer) *connection.Observer {
	return &connection.Observer{
		Request: func(ctx context.Context, r connection.Request) func(connection.RequestDone) {
			da, db := a.Request(ctx, r), b.Request(ctx, r)
			return func(d connection.RequestDone) { da(d); db(d) }
		},
		StateChange:  func(s connection.StateChange) { a.StateChange(s); b.StateChange(s) },
		Notification: func(n connection.Notification) { a.Notification(n); b.Notification(n) },
		Wait: func(ctx context.Context, w connection.Wait) (context.Context, func(connection.WaitDone)) {
			ctx, da := a.Wait(ctx, w)
			ctx, db := b.Wait(ctx, w)
			return ctx, func(d connection.WaitDone) { da(d); db(d) }
		},
		Hold: func(ctx context.Context, h connection.Hold) func(connection.HoldDone) {
			da, db := a.Hold(ctx, h), b.Hold(ctx, h)
			return func(d connection.HoldDone) { da(d); db(d) }
		},
		View:   func(v connection.ViewChange) { a.View(v); b.View(v) },
		Closed: func(c connection.ClientClosed) { a.Closed(c); b.Closed(c) },
		CounterOutcome: func(ctx context.Context, o connection.CounterOutcome) {
			a.CounterOutcome(ctx, o)
			b.CounterOutcome(ctx, o)
		},
	}
}
