package otelzk

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zkrecipes/zkrecipes/connection"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/zkrecipes/zkrecipes/observe/otel"

// NewObserver returns an observer that makes OpenTelemetry spans and
// metrics of what a client and its recipes do; give it to
// connection.Open with connection.WithObserver. docs/observability.md
// lists the spans, instruments and attributes.
//
// Give each client an observer of its own: the session state instrument
// moves a client from its last state to its new one, and an observer
// keeps one client's last state. Observers made with the same providers
// record into the same instruments.
//
// A nil option or provider is ignored (the global provider stays); New
// refuses it.
func NewObserver(opts ...Option) *connection.Observer {
	return newObserver(newConfig(opts))
}

// New is NewObserver that refuses an invalid option — nil, or a nil
// provider — with an error wrapping ErrInvalidOption, where NewObserver
// keeps the global provider: a program whose provider was never set sees
// it at once rather than finding its telemetry in the global no-op one.
func New(opts ...Option) (*connection.Observer, error) {
	cfg := newConfig(opts)
	if err := cfg.err(); err != nil {
		return nil, fmt.Errorf("otelzk: %w", err)
	}
	return newObserver(cfg), nil
}

func newObserver(cfg config) *connection.Observer {
	o := &observer{tracer: cfg.tp.Tracer(ScopeName)}
	o.newInstruments(cfg.mp.Meter(ScopeName))
	return &connection.Observer{
		Request:        o.request,
		StateChange:    o.stateChange,
		Notification:   o.notification,
		Wait:           o.wait,
		Hold:           o.hold,
		View:           o.view,
		Closed:         o.closed,
		CounterOutcome: o.counterOutcome,
	}
}

type observer struct {
	tracer trace.Tracer

	requestDuration metric.Float64Histogram
	waitDuration    metric.Float64Histogram
	holdDuration    metric.Float64Histogram
	holdsLost       metric.Int64Counter
	holdsActive     metric.Int64UpDownCounter
	notifications   metric.Int64Counter
	sessionState    metric.Int64UpDownCounter
	viewsTrusted    metric.Int64UpDownCounter
	viewsUntrusted  metric.Int64Counter
	watchAge        metric.Float64Histogram
	counterOutcomes metric.Int64Counter

	mu    sync.Mutex
	state string // the client's last state as sessionState counts it, "" before the first

	// requestSets holds the attribute set of request durations by
	// operation and error.type: a bounded set, built once each rather
	// than on every request.
	requestSets sync.Map // requestKey -> metric.MeasurementOption
}

type requestKey struct{ op, errorType string }

// requestSet returns the measurement option of request durations of op
// ending with errorType ("" for a success).
func (o *observer) requestSet(op, errorType string) metric.MeasurementOption {
	k := requestKey{op, errorType}
	if s, ok := o.requestSets.Load(k); ok {
		return s.(metric.MeasurementOption)
	}
	attrs := []attribute.KeyValue{systemZooKeeper, attrOperation.String(op)}
	if errorType != "" {
		attrs = append(attrs, attrErrorType.String(errorType))
	}
	s, _ := o.requestSets.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(attrs...)))
	return s.(metric.MeasurementOption)
}

// durationBuckets are the bucket boundaries, in seconds, OpenTelemetry's
// conventions advise for db.client.operation.duration; the waits' and
// holds' histograms, whose values are longer, add minutes to them.
var (
	durationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}
	longBuckets     = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}
)

// newInstruments makes the instruments with m. An instrument the meter
// refuses is reported to otel.Handle and replaced by a no-op one, as the
// meter API returns: metrics are not a reason to fail a client.
func (o *observer) newInstruments(m metric.Meter) {
	var err error
	o.requestDuration, err = m.Float64Histogram("db.client.operation.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of ZooKeeper requests, from their hand-over to the connection to their answer or failure."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	handle(err)
	o.waitDuration, err = m.Float64Histogram("zkrecipes.wait.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of lock recipes' waits for their turn."),
		metric.WithExplicitBucketBoundaries(longBuckets...))
	handle(err)
	o.holdDuration, err = m.Float64Histogram("zkrecipes.hold.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of recipes' holds, released or lost."),
		metric.WithExplicitBucketBoundaries(longBuckets...))
	handle(err)
	o.holdsLost, err = m.Int64Counter("zkrecipes.hold.lost",
		metric.WithUnit("{hold}"),
		metric.WithDescription("Holds that ended without their holder's release, by cause."))
	handle(err)
	o.holdsActive, err = m.Int64UpDownCounter("zkrecipes.hold.active",
		metric.WithUnit("{hold}"),
		metric.WithDescription("Holds held now."))
	handle(err)
	o.notifications, err = m.Int64Counter("zkrecipes.notifications",
		metric.WithUnit("{notification}"),
		metric.WithDescription("Watch notifications from the server, by type."))
	handle(err)
	o.sessionState, err = m.Int64UpDownCounter("zkrecipes.session.state",
		metric.WithUnit("{client}"),
		metric.WithDescription("Clients in each session state."))
	handle(err)
	o.viewsTrusted, err = m.Int64UpDownCounter("zkrecipes.view.trusted",
		metric.WithUnit("{view}"),
		metric.WithDescription("Views (caches and the views built on them) trusted now."))
	handle(err)
	o.viewsUntrusted, err = m.Int64Counter("zkrecipes.view.untrusted",
		metric.WithUnit("{view}"),
		metric.WithDescription("Ends of views' trust, by cause."))
	handle(err)
	o.watchAge, err = m.Float64Histogram("zkrecipes.notification.watch_age",
		metric.WithUnit("s"),
		metric.WithDescription("Time from setting a watch to the notification that fired it, where the client knows it."),
		metric.WithExplicitBucketBoundaries(longBuckets...))
	handle(err)
	o.counterOutcomes, err = m.Int64Counter("zkrecipes.counter.outcomes",
		metric.WithUnit("{write}"),
		metric.WithDescription("Shared counters' writes whose answer was lost, by outcome: applied, not_applied (settled by the marker's read), unknown."))
	handle(err)
}

func handle(err error) {
	if err != nil {
		otel.Handle(err)
	}
}

func (o *observer) request(ctx context.Context, r connection.Request) func(connection.RequestDone) {
	_, span := o.tracer.Start(ctx, "zookeeper "+r.Op,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(requestAttrs(r)...))
	return func(d connection.RequestDone) {
		if d.Bytes > 0 {
			span.SetAttributes(attrResponseBytes.Int(d.Bytes))
		}
		errorType := ""
		if d.Err != nil {
			errorType = requestErrorType(d.Err)
			span.SetAttributes(attrErrorType.String(errorType))
			span.SetStatus(codes.Error, d.Err.Error())
		}
		span.End()
		o.requestDuration.Record(ctx, d.Duration.Seconds(), o.requestSet(r.Op, errorType))
	}
}

func requestAttrs(r connection.Request) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, systemZooKeeper, attrOperation.String(r.Op))
	if r.Path != "" {
		attrs = append(attrs, attrPath.String(r.Path))
	}
	if r.SessionID != 0 {
		attrs = append(attrs, sessionAttr(r.SessionID))
	}
	attrs = append(attrs, attrWatch.Bool(r.Watch), attrAttempt.Int(r.Attempt))
	if r.Bytes > 0 {
		attrs = append(attrs, attrRequestBytes.Int(r.Bytes))
	}
	return attrs
}

// sessionAttr is session id as ZooKeeper's logs and four-letter words
// write it: 0x and lower-case hexadecimal.
func sessionAttr(id int64) attribute.KeyValue {
	return attrSession.String("0x" + strconv.FormatUint(uint64(id), 16))
}

func (o *observer) wait(ctx context.Context, w connection.Wait) (context.Context, func(connection.WaitDone)) {
	ctx, span := o.tracer.Start(ctx, w.Recipe+" wait",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attrRecipe.String(w.Recipe),
			attrRecipePath.String(w.Path),
			attrParticipant.String(w.Participant),
			attrAhead.Int(w.Ahead)))
	return ctx, func(d connection.WaitDone) {
		attrs := []attribute.KeyValue{attrRecipe.String(w.Recipe)}
		if d.Err != nil {
			et := attrErrorType.String(waitErrorType(d.Err))
			attrs = append(attrs, et)
			span.SetAttributes(et)
			span.SetStatus(codes.Error, d.Err.Error())
		}
		span.End()
		o.waitDuration.Record(ctx, d.Duration.Seconds(), metric.WithAttributes(attrs...))
	}
}

func (o *observer) hold(ctx context.Context, h connection.Hold) func(connection.HoldDone) {
	_, span := o.tracer.Start(ctx, h.Recipe+" hold",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attrRecipe.String(h.Recipe),
			attrRecipePath.String(h.Path),
			attrParticipant.String(h.Participant),
			attrToken.Int64(h.Token),
			sessionAttr(h.SessionID)))
	active := metric.WithAttributes(attrRecipe.String(h.Recipe))
	o.holdsActive.Add(ctx, 1, active)
	return func(d connection.HoldDone) {
		o.holdsActive.Add(ctx, -1, active)
		cause := holdCause(d.Cause)
		attrs := []attribute.KeyValue{attrRecipe.String(h.Recipe), attrCause.String(cause)}
		span.SetAttributes(attrCause.String(cause))
		if d.Consumed {
			span.SetAttributes(attrConsumed.Bool(true))
		}
		if d.Cause != nil {
			span.SetStatus(codes.Error, d.Cause.Error())
		}
		span.End()
		set := metric.WithAttributes(attrs...)
		o.holdDuration.Record(ctx, d.Duration.Seconds(), set)
		if d.Cause != nil {
			o.holdsLost.Add(ctx, 1, set)
		}
	}
}

func (o *observer) stateChange(s connection.StateChange) {
	now := stateName(s.State)
	o.mu.Lock()
	defer o.mu.Unlock()
	if now == o.state {
		return
	}
	ctx := context.Background()
	if o.state != "" {
		o.sessionState.Add(ctx, -1, metric.WithAttributes(attrState.String(o.state)))
	}
	o.sessionState.Add(ctx, 1, metric.WithAttributes(attrState.String(now)))
	o.state = now
}

func (o *observer) view(v connection.ViewChange) {
	ctx := context.Background()
	recipe := attrRecipe.String(v.Recipe)
	if v.Trusted {
		o.viewsTrusted.Add(ctx, 1, metric.WithAttributes(recipe))
		return
	}
	o.viewsTrusted.Add(ctx, -1, metric.WithAttributes(recipe))
	o.viewsUntrusted.Add(ctx, 1, metric.WithAttributes(recipe, attrCause.String(viewCause(v.Cause))))
}

func (o *observer) notification(n connection.Notification) {
	typ := metric.WithAttributes(attrEventType.String(eventType(n.Type)))
	o.notifications.Add(context.Background(), 1, typ)
	if n.SinceWatch > 0 {
		o.watchAge.Record(context.Background(), n.SinceWatch.Seconds(), typ)
	}
}

// closed takes the closed client out of the session state instrument: it
// is in no state.
func (o *observer) closed(connection.ClientClosed) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.state != "" {
		o.sessionState.Add(context.Background(), -1, metric.WithAttributes(attrState.String(o.state)))
		o.state = ""
	}
}

func (o *observer) counterOutcome(ctx context.Context, c connection.CounterOutcome) {
	o.counterOutcomes.Add(ctx, 1, metric.WithAttributes(attrOutcome.String(counterOutcome(c))))
}
