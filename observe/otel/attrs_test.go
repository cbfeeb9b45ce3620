package otelzk

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

func TestErrorsAreNamedByWhatTheyMatch(t *testing.T) {
	wrap := func(errs ...error) error { return fmt.Errorf("mutex: lock /l: %w", errors.Join(errs...)) }
	other := errors.New("revoked")
	for _, c := range []struct {
		what string
		f    func(error) string
		err  error
		want string
	}{
		{"request", requestErrorType, zk.ErrNoNode, "NONODE"},
		{"request", requestErrorType, fmt.Errorf("create /x: %w", zk.ErrNodeExists), "NODEEXISTS"},
		{"request", requestErrorType, zk.ErrConnectionClosed, "CONNECTIONLOSS"},
		{"request", requestErrorType, zk.ErrClosing, "CLOSING"},
		{"request", requestErrorType, zk.ErrSessionExpired, "SESSIONEXPIRED"},
		{"request", requestErrorType, fmt.Errorf("getChildren2 /x: %w", connection.ErrResponseTooLarge), "response_too_large"},
		{"request", requestErrorType, context.DeadlineExceeded, "deadline_exceeded"},
		{"request", requestErrorType, other, "_OTHER"},
		{"wait", waitErrorType, context.Canceled, "canceled"},
		{"wait", waitErrorType, wrap(context.DeadlineExceeded), "deadline_exceeded"},
		{"wait", waitErrorType, wrap(connection.ErrSessionLost), "session_lost"},
		{"wait", waitErrorType, wrap(connection.ErrSuspended), "suspended"},
		{"wait", waitErrorType, wrap(connection.ErrNodeDeleted), "node_deleted"},
		{"wait", waitErrorType, other, "_OTHER"},
		{"hold", holdCause, nil, "released"},
		{"hold", holdCause, wrap(connection.ErrSuspended), "suspended"},
		{"hold", holdCause, wrap(connection.ErrSessionLost), "session_lost"},
		{"hold", holdCause, wrap(connection.ErrSuspended, connection.ErrSessionLost), "session_lost"},
		{"hold", holdCause, wrap(connection.ErrNodeDeleted), "node_deleted"},
		{"hold", holdCause, wrap(other), "other"},
		{"view", viewCause, cache.ErrSuspended, "suspended"},
		{"view", viewCause, wrap(connection.ErrSessionLost), "session_lost"},
		{"view", viewCause, cache.ErrClosed, "closed"},
		{"view", viewCause, other, "other"},
	} {
		if got := c.f(c.err); got != c.want {
			t.Errorf("%s ended by %v: %q, want %q", c.what, c.err, got, c.want)
		}
	}
}

func TestStatesAreNamedAsTheSessionStateCountsThem(t *testing.T) {
	for s, want := range map[connection.State]string{
		connection.Connected:   "connected",
		connection.Reconnected: "reconnected",
		connection.Suspended:   "suspended",
		connection.Lost:        "lost",
		connection.ReadOnly:    "read_only",
		connection.State(0):    "unknown",
	} {
		if got := stateName(s); got != want {
			t.Errorf("stateName(%v) = %q, want %q", s, got, want)
		}
	}
}

func TestNotificationsAreNamedByType(t *testing.T) {
	for typ, want := range map[zk.EventType]string{
		zk.EventNodeCreated:         "node_created",
		zk.EventNodeDeleted:         "node_deleted",
		zk.EventNodeDataChanged:     "node_data_changed",
		zk.EventNodeChildrenChanged: "node_children_changed",
		zk.EventSession:             "other",
	} {
		if got := eventType(typ); got != want {
			t.Errorf("eventType(%v) = %q, want %q", typ, got, want)
		}
	}
}
