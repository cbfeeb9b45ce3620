package zkprom

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestRequestResultNamesWrappedErrors: a request's result label names
// the error it wraps, and anything unknown is "other", so that the
// label's values stay a fixed set.
func TestRequestResultNamesWrappedErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{zk.ErrNoNode, "no_node"},
		{fmt.Errorf("get /a: %w", zk.ErrNodeExists), "node_exists"},
		{fmt.Errorf("set: %w", zk.ErrBadVersion), "bad_version"},
		{zk.ErrConnectionClosed, "connection_closed"},
		{zk.ErrClosing, "closing"},
		{zk.ErrSessionExpired, "session_expired"},
		{connection.ErrResponseTooLarge, "response_too_large"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), "deadline_exceeded"},
		{errors.New("zk: something new at /path/12345"), "other"},
	} {
		if got := result(c.err); got != c.want {
			t.Errorf("result(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestLostCauseMatchesErrorsIs: a hold's loss is classified with
// errors.Is, a session's loss before a suspension.
func TestLostCauseMatchesErrorsIs(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("hold: %w", connection.ErrSuspended), "suspended"},
		{fmt.Errorf("hold: %w", connection.ErrSessionLost), "session_lost"},
		{fmt.Errorf("hold: %w: %w", connection.ErrSuspended, connection.ErrSessionLost), "session_lost"},
		{fmt.Errorf("hold: %w", connection.ErrNodeDeleted), "node_deleted"},
		{errors.New("revoked"), "other"},
	} {
		if got := lostCause(c.err); got != c.want {
			t.Errorf("lostCause(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{fmt.Errorf("lock: %w", context.Canceled), "canceled"},
		{context.DeadlineExceeded, "deadline_exceeded"},
		{fmt.Errorf("lock: %w", connection.ErrSessionLost), "session_lost"},
	} {
		if got := waitResult(c.err); got != c.want {
			t.Errorf("waitResult(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestNewObserverRefusesInvalidOptions: a nil Registerer, a nil option,
// bad buckets and bad or clashing constant labels are refused with
// ErrInvalidOption, and nothing is registered.
func TestNewObserverRefusesInvalidOptions(t *testing.T) {
	if _, err := NewObserver(nil); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("nil registerer: %v, want ErrInvalidOption", err)
	}
	for name, opt := range map[string]Option{
		"nil option":           nil,
		"no buckets":           WithRequestBuckets(),
		"decreasing buckets":   WithRequestBuckets(1, 0.5),
		"zero bucket":          WithHoldBuckets(0, 1),
		"label name with dash": WithConstLabels(prometheus.Labels{"client-name": "a"}),
		"reserved label name":  WithConstLabels(prometheus.Labels{"__name": "a"}),
		"adapter's own label":  WithConstLabels(prometheus.Labels{"recipe": "a"}),
	} {
		reg := prometheus.NewRegistry()
		if _, err := NewObserver(reg, opt); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
		if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
			t.Errorf("%s: %d metric families registered (%v), want none", name, len(mfs), err)
		}
	}
}

// TestSecondObserverNeedsOtherConstLabels: two observers on one registry
// collide unless their constant labels differ; the one refused leaves
// the registry as it was.
func TestSecondObserverNeedsOtherConstLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewObserver(reg, WithConstLabels(prometheus.Labels{"client": "a"})); err != nil {
		t.Fatal(err)
	}
	_, err := NewObserver(reg, WithConstLabels(prometheus.Labels{"client": "a"}))
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("same labels: %v, want a prometheus.AlreadyRegisteredError", err)
	}
	if _, err := NewObserver(reg, WithConstLabels(prometheus.Labels{"client": "b"})); err != nil {
		t.Fatalf("other labels: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "zkrecipes_session_state" && len(mf.GetMetric()) != 2*len(states) {
			t.Errorf("zkrecipes_session_state: %d series, want %d (two clients)", len(mf.GetMetric()), 2*len(states))
		}
	}
}
