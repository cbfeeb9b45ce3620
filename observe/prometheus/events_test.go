package zkprom

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestNotificationsAndViewsAreCounted: each notification counts under
// its type, and a view's trust begun and ended moves the gauge of its
// recipe up and down.
func TestNotificationsAndViewsAreCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	o.Notification(connection.Notification{Type: zk.EventNodeDataChanged, Path: "/a"})
	o.Notification(connection.Notification{Type: zk.EventNodeDataChanged, Path: "/b"})
	o.Notification(connection.Notification{Type: zk.EventNodeChildrenChanged, Path: "/a"})
	o.View(connection.ViewChange{Recipe: "cache", Path: "/a", Trusted: true})
	o.View(connection.ViewChange{Recipe: "cache", Path: "/b", Trusted: true})
	o.View(connection.ViewChange{Recipe: "cache", Path: "/a", Trusted: false, Cause: errors.New("closed")})
	const want = `
# HELP zkrecipes_notifications_total Watch notifications received from ZooKeeper, by type.
# TYPE zkrecipes_notifications_total counter
zkrecipes_notifications_total{type="node_children_changed"} 1
zkrecipes_notifications_total{type="node_data_changed"} 2
# HELP zkrecipes_views_trusted Views (caches and the views built on one) trusted now, by recipe.
# TYPE zkrecipes_views_trusted gauge
zkrecipes_views_trusted{recipe="cache"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "zkrecipes_notifications_total", "zkrecipes_views_trusted"); err != nil {
		t.Error(err)
	}
}

// TestRequestInFlightUntilItsEnd: a request counts in flight from its
// beginning to its end, and is observed under its operation and result
// only then.
func TestRequestInFlightUntilItsEnd(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	done := o.Request(context.Background(), connection.Request{Op: "getData", Path: "/a"})
	wantSeries(t, reg, "zkrecipes_requests_in_flight", map[string]float64{"": 1})
	wantSeries(t, reg, "zkrecipes_request_duration_seconds", map[string]float64{})
	done(connection.RequestDone{Err: zk.ErrNoNode})
	wantSeries(t, reg, "zkrecipes_requests_in_flight", map[string]float64{"": 0})
	wantSeries(t, reg, "zkrecipes_request_duration_seconds", map[string]float64{"getData,no_node": 1})
}
