package zkprom

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkrecipes/zkrecipes/connection"
)

// ErrInvalidOption is connection.ErrInvalidOption: NewObserver refuses a
// nil Registerer, and options with values they cannot take, with an error
// that wraps it.
var ErrInvalidOption = connection.ErrInvalidOption

// Option configures NewObserver.
type Option func(*config) error

type config struct {
	constLabels    prometheus.Labels
	requestBuckets []float64
	holdBuckets    []float64
}

// WithConstLabels adds labels with fixed values to every series, such as
// {"client": "orders"}: what tells apart the clients of one process that
// register on the same Registerer. A label name of the adapter's own
// (op, result, type, state, recipe, cause) is refused, as is an invalid
// name.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(c *config) error {
		for name := range labels {
			if !validLabelName(name) {
				return fmt.Errorf("%w: constant label name %q", ErrInvalidOption, name)
			}
			if ownLabels[name] {
				return fmt.Errorf("%w: constant label %q is one of the adapter's own labels", ErrInvalidOption, name)
			}
		}
		c.constLabels = make(prometheus.Labels, len(labels))
		for k, v := range labels {
			c.constLabels[k] = v
		}
		return nil
	}
}

// WithRequestBuckets sets the upper bounds, in seconds, of the buckets of
// zkrecipes_request_duration_seconds (DefaultRequestBuckets unless set).
// They must be positive and increasing.
func WithRequestBuckets(bounds ...float64) Option {
	return func(c *config) error {
		if err := checkBuckets(bounds); err != nil {
			return err
		}
		c.requestBuckets = append([]float64(nil), bounds...)
		return nil
	}
}

// WithHoldBuckets sets the upper bounds, in seconds, of the buckets of
// zkrecipes_hold_wait_seconds, zkrecipes_hold_duration_seconds and
// zkrecipes_notification_watch_age_seconds (DefaultHoldBuckets unless
// set). They must be positive and increasing.
func WithHoldBuckets(bounds ...float64) Option {
	return func(c *config) error {
		if err := checkBuckets(bounds); err != nil {
			return err
		}
		c.holdBuckets = append([]float64(nil), bounds...)
		return nil
	}
}

var (
	// DefaultRequestBuckets are the buckets of a request's duration: 250 µs
	// to about 8 s, doubling; a request to a nearby ensemble takes a
	// millisecond or less, one queued through a reconnection seconds.
	DefaultRequestBuckets = prometheus.ExponentialBuckets(0.00025, 2, 16)
	// DefaultHoldBuckets are the buckets of waits, holds and watches'
	// ages: 1 ms to about 4.5 hours, each 4 times the last; a hold lasts
	// what its holder's work lasts, from milliseconds to a leader's
	// hours, and a watch waits as long for its change.
	DefaultHoldBuckets = prometheus.ExponentialBuckets(0.001, 4, 12)
)

func checkBuckets(bounds []float64) error {
	if len(bounds) == 0 {
		return fmt.Errorf("%w: no bucket bounds", ErrInvalidOption)
	}
	for i, b := range bounds {
		if !(b > 0) || (i > 0 && b <= bounds[i-1]) {
			return fmt.Errorf("%w: bucket bounds %v: not positive and increasing", ErrInvalidOption, bounds)
		}
	}
	return nil
}

// ownLabels are the variable labels of the adapter's series.
var ownLabels = map[string]bool{"op": true, "result": true, "type": true, "state": true, "recipe": true, "cause": true, "outcome": true}

func validLabelName(name string) bool {
	if name == "" || len(name) >= 2 && name[:2] == "__" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// NewObserver returns an observer that records what a client and its
// recipes do as Prometheus metrics (the package comment lists them),
// having registered their collector on reg. Give it to connection.Open
// with connection.WithObserver.
//
// The collector is registered as one: on an error nothing is registered.
// A second observer on the same Registerer needs other constant labels
// (WithConstLabels), or registration fails with the Registerer's error
// (a prometheus.AlreadyRegisteredError for a Registry). A nil reg, or a
// refused option, is an error wrapping ErrInvalidOption.
func NewObserver(reg prometheus.Registerer, opts ...Option) (*connection.Observer, error) {
	obs, _, err := RegisterObserver(reg, opts...)
	return obs, err
}

// RegisterObserver is NewObserver that also returns the function that
// unregisters the collector from reg, for a service that opens and closes
// clients on one Registerer: once the client is closed, unregister takes
// its series off, and an observer with the same constant labels can be
// registered again. unregister reports whether the collector was
// registered (as prometheus.Registerer's Unregister does); an observer
// still in use after it records into series nobody collects.
func RegisterObserver(reg prometheus.Registerer, opts ...Option) (obs *connection.Observer, unregister func() bool, err error) {
	if reg == nil {
		return nil, nil, fmt.Errorf("%w: nil prometheus.Registerer", ErrInvalidOption)
	}
	cfg := config{
		requestBuckets: append([]float64(nil), DefaultRequestBuckets...),
		holdBuckets:    append([]float64(nil), DefaultHoldBuckets...),
	}
	for _, o := range opts {
		if o == nil {
			return nil, nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(&cfg); err != nil {
			return nil, nil, err
		}
	}
	m := newMetrics(cfg)
	if err := reg.Register(m); err != nil {
		return nil, nil, fmt.Errorf("zkprom: register the collector: %w", err)
	}
	return m.observer(), func() bool { return reg.Unregister(m) }, nil
}

// metrics are the series of one observer, collected as one.
type metrics struct {
	requestDuration *prometheus.HistogramVec
	inFlight        prometheus.Gauge
	notifications   *prometheus.CounterVec
	sessionState    *prometheus.GaugeVec
	sessionChanges  *prometheus.CounterVec
	waits           *prometheus.HistogramVec
	holds           *prometheus.GaugeVec
	holdsLost       *prometheus.CounterVec
	holdDuration    *prometheus.HistogramVec
	viewsTrusted    *prometheus.GaugeVec
	watchAge        *prometheus.HistogramVec
	counterOutcomes *prometheus.CounterVec
}

// states are the session's states, each a series of zkrecipes_session_state.
var states = []connection.State{connection.Connected, connection.Suspended, connection.Reconnected, connection.Lost, connection.ReadOnly}

func newMetrics(cfg config) *metrics {
	cl := cfg.constLabels
	m := &metrics{
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "zkrecipes_request_duration_seconds",
			Help:        "Time from handing a ZooKeeper request to the connection to its answer, or to why none came, by operation and result.",
			Buckets:     cfg.requestBuckets,
			ConstLabels: cl,
		}, []string{"op", "result"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "zkrecipes_requests_in_flight",
			Help:        "ZooKeeper requests sent and not answered yet.",
			ConstLabels: cl,
		}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "zkrecipes_notifications_total",
			Help:        "Watch notifications received from ZooKeeper, by type.",
			ConstLabels: cl,
		}, []string{"type"}),
		sessionState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        "zkrecipes_session_state",
			Help:        "The client's connection state: 1 for the current state, 0 for the others; all 0 before the first session and once the client is closed.",
			ConstLabels: cl,
		}, []string{"state"}),
		sessionChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "zkrecipes_session_changes_total",
			Help:        "Changes of the client's connection state, by the state entered.",
			ConstLabels: cl,
		}, []string{"state"}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "zkrecipes_hold_wait_seconds",
			Help:        "Time a lock recipe's contender waited for its turn, by recipe and result (ok: its turn came).",
			Buckets:     cfg.holdBuckets,
			ConstLabels: cl,
		}, []string{"recipe", "result"}),
		holds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        "zkrecipes_holds",
			Help:        "Holds held now (locks, leases, leaders' terms, queue items taken), by recipe.",
			ConstLabels: cl,
		}, []string{"recipe"}),
		holdsLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "zkrecipes_holds_lost_total",
			Help:        "Holds that ended otherwise than by their release, by recipe and cause (suspended, session_lost, node_deleted, other).",
			ConstLabels: cl,
		}, []string{"recipe", "cause"}),
		holdDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "zkrecipes_hold_duration_seconds",
			Help:        "How long holds lasted, released or lost, by recipe.",
			Buckets:     cfg.holdBuckets,
			ConstLabels: cl,
		}, []string{"recipe"}),
		viewsTrusted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        "zkrecipes_views_trusted",
			Help:        "Views (caches and the views built on one) trusted now, by recipe.",
			ConstLabels: cl,
		}, []string{"recipe"}),
		watchAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "zkrecipes_notification_watch_age_seconds",
			Help:        "Time from setting a watch to the notification that fired it, where the client knows it, by type.",
			Buckets:     cfg.holdBuckets,
			ConstLabels: cl,
		}, []string{"type"}),
		counterOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "zkrecipes_counter_outcomes_total",
			Help:        "Shared counters' writes whose answer was lost, by what the counter learnt: applied, not_applied (settled by its marker's read), unknown.",
			ConstLabels: cl,
		}, []string{"outcome"}),
	}
	for _, s := range states {
		m.sessionState.WithLabelValues(stateLabel(s))
	}
	for _, o := range []string{"applied", "not_applied", "unknown"} {
		m.counterOutcomes.WithLabelValues(o)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requestDuration, m.inFlight, m.notifications, m.sessionState,
		m.sessionChanges, m.waits, m.holds, m.holdsLost, m.holdDuration, m.viewsTrusted, m.watchAge, m.counterOutcomes}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// observer returns the connection.Observer that records into m. Its
// functions only update in-memory series: they neither block nor call
// the client, as the observer's contract requires.
func (m *metrics) observer() *connection.Observer {
	return &connection.Observer{
		Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
			m.inFlight.Inc()
			return func(d connection.RequestDone) {
				m.inFlight.Dec()
				m.requestDuration.WithLabelValues(r.Op, result(d.Err)).Observe(d.Duration.Seconds())
			}
		},
		Notification: func(n connection.Notification) {
			label := eventLabel(n.Type)
			m.notifications.WithLabelValues(label).Inc()
			if n.SinceWatch > 0 {
				m.watchAge.WithLabelValues(label).Observe(n.SinceWatch.Seconds())
			}
		},
		StateChange: func(s connection.StateChange) {
			label := stateLabel(s.State)
			for _, st := range states {
				v := 0.0
				if st == s.State {
					v = 1
				}
				m.sessionState.WithLabelValues(stateLabel(st)).Set(v)
			}
			m.sessionChanges.WithLabelValues(label).Inc()
		},
		Closed: func(connection.ClientClosed) {
			// A closed client is in no state.
			for _, st := range states {
				m.sessionState.WithLabelValues(stateLabel(st)).Set(0)
			}
		},
		CounterOutcome: func(_ context.Context, o connection.CounterOutcome) {
			m.counterOutcomes.WithLabelValues(counterOutcome(o)).Inc()
		},
		Wait: func(ctx context.Context, w connection.Wait) (context.Context, func(connection.WaitDone)) {
			return ctx, func(d connection.WaitDone) {
				m.waits.WithLabelValues(w.Recipe, waitResult(d.Err)).Observe(d.Duration.Seconds())
			}
		},
		Hold: func(_ context.Context, h connection.Hold) func(connection.HoldDone) {
			m.holds.WithLabelValues(h.Recipe).Inc()
			return func(d connection.HoldDone) {
				m.holds.WithLabelValues(h.Recipe).Dec()
				m.holdDuration.WithLabelValues(h.Recipe).Observe(d.Duration.Seconds())
				if d.Cause != nil {
					m.holdsLost.WithLabelValues(h.Recipe, lostCause(d.Cause)).Inc()
				}
			}
		},
		View: func(v connection.ViewChange) {
			if v.Trusted {
				m.viewsTrusted.WithLabelValues(v.Recipe).Inc()
			} else {
				m.viewsTrusted.WithLabelValues(v.Recipe).Dec()
			}
		},
	}
}

// stateLabel is a state's label value: CONNECTED, SUSPENDED, RECONNECTED,
// LOST, READ_ONLY (State.String).
func stateLabel(s connection.State) string { return s.String() }

// eventLabel is a notification type's label value.
func eventLabel(t zk.EventType) string {
	switch t {
	case zk.EventNodeCreated:
		return "node_created"
	case zk.EventNodeDeleted:
		return "node_deleted"
	case zk.EventNodeDataChanged:
		return "node_data_changed"
	case zk.EventNodeChildrenChanged:
		return "node_children_changed"
	}
	return "other"
}

// results are the errors a request's result label names; any other
// error is "other", so that the label's values stay a fixed set.
var results = []struct {
	err  error
	name string
}{
	{zk.ErrNoNode, "no_node"},
	{zk.ErrNodeExists, "node_exists"},
	{zk.ErrBadVersion, "bad_version"},
	{zk.ErrNotEmpty, "not_empty"},
	{zk.ErrNoChildrenForEphemerals, "no_children_for_ephemerals"},
	{zk.ErrConnectionClosed, "connection_closed"},
	{zk.ErrClosing, "closing"},
	{zk.ErrSessionExpired, "session_expired"},
	{zk.ErrSessionMoved, "session_moved"},
	{zk.ErrNoAuth, "no_auth"},
	{zk.ErrAuthFailed, "auth_failed"},
	{zk.ErrInvalidACL, "invalid_acl"},
	{zk.ErrInvalidFlags, "invalid_flags"},
	{zk.ErrBadArguments, "bad_arguments"},
	{zk.ErrAPIError, "api_error"},
	{zk.ErrUnknown, "unknown"},
	{connection.ErrResponseTooLarge, "response_too_large"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
}

// result is the result label of a request's outcome: "ok" for nil, a
// short name of go-zookeeper's error it wraps ("no_node",
// "node_exists", "bad_version", "connection_closed", "session_expired",
// ...), "canceled" or "deadline_exceeded" for a context's error, and
// "other" for any other error.
func result(err error) string {
	if err == nil {
		return "ok"
	}
	for _, r := range results {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "other"
}

// waitResult is the result label of a wait's end: "ok" when the turn
// came, else the cause as lostCause names it, or "canceled" and
// "deadline_exceeded" for the caller's context.
func waitResult(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return lostCause(err)
}

// counterOutcome is the outcome label of a counter's lost answer:
// "applied", "not_applied" or "unknown".
func counterOutcome(o connection.CounterOutcome) string {
	switch {
	case !o.Settled:
		return "unknown"
	case o.Applied:
		return "applied"
	}
	return "not_applied"
}

// lostCause is the cause label of a hold's loss: "session_lost",
// "suspended" or "node_deleted" for an error wrapping
// connection.ErrSessionLost, ErrSuspended or ErrNodeDeleted (in that
// order: a loss that says both suspended and lost is "session_lost"),
// "other" for any other (a revocation, a recipe's own error).
func lostCause(err error) string {
	switch {
	case errors.Is(err, connection.ErrSessionLost):
		return "session_lost"
	case errors.Is(err, connection.ErrSuspended):
		return "suspended"
	case errors.Is(err, connection.ErrNodeDeleted):
		return "node_deleted"
	}
	return "other"
}
