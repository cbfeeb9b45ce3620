package otelzk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func newMutex(t *testing.T, c *connection.Client, path string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// callerCtx returns a context of d carrying a span of the caller's (and
// the Recorder's mark "caller"), and that span's context.
func callerCtx(t *testing.T, tel *telemetry, d time.Duration) (context.Context, trace.SpanContext) {
	ctx, span := tel.tp.Tracer("caller").Start(testkit.Ctx(t, d), "caller")
	t.Cleanup(func() { span.End() })
	return context.WithValue(ctx, testkit.CtxKey{}, "caller"), span.SpanContext()
}

func hexID(id int64) string { return fmt.Sprintf("%#x", id) }

// wantRequestSpans checks that the request spans are exactly the requests
// the Recorder heard, each with its attributes and outcome, and that a
// request's span is a child of the caller's span when the caller's
// context reached it and of the wait's when the wait's did.
func wantRequestSpans(t *testing.T, tel *telemetry, rec *testkit.Recorder, caller, wait trace.SpanContext) {
	t.Helper()
	key := func(op, path string, watch bool, attempt int, session, err, parent string) string {
		return fmt.Sprintf("%s %s watch=%v attempt=%d session=%s err=%q parent=%s", op, path, watch, attempt, session, err, parent)
	}
	parentOf := func(p trace.SpanContext) string {
		switch {
		case p.Equal(caller) && caller.IsValid():
			return "caller"
		case p.Equal(wait) && wait.IsValid():
			return "wait"
		case !p.IsValid():
			return "none"
		}
		return "other " + p.SpanID().String()
	}
	want := map[string]int{}
	requests := rec.Requests()
	testkit.OnceEnded(t, "request", requests)
	errs := map[string]int{}
	for _, r := range requests {
		parent := "none"
		switch r.CtxVal {
		case "caller":
			parent = "caller"
		case testkit.WaitCtxVal:
			parent = "wait"
		}
		session, msg := "", ""
		if r.Begin.SessionID != 0 {
			session = hexID(r.Begin.SessionID)
		}
		if err := r.Ends[0].Err; err != nil {
			msg = err.Error()
		}
		want[key(r.Begin.Op, r.Begin.Path, r.Begin.Watch, r.Begin.Attempt, session, msg, parent)]++
		errs[fmt.Sprintf("op=%s err=%v", r.Begin.Op, msg != "")]++
	}
	got := map[string]int{}
	n := 0
	for _, s := range tel.spans.Ended() {
		a := attrs(s)
		if a["db.system.name"].AsString() != "zookeeper" {
			continue
		}
		n++
		op := a["db.operation.name"].AsString()
		if s.Name() != "zookeeper "+op || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("request span %q of kind %v, want %q of kind client", s.Name(), s.SpanKind(), "zookeeper "+op)
		}
		msg := ""
		if s.Status().Code == codes.Error {
			msg = s.Status().Description
			if a["error.type"].AsString() == "" {
				t.Errorf("span %q failed with %q and has no error.type", s.Name(), msg)
			}
		} else if _, ok := a["error.type"]; ok {
			t.Errorf("span %q has error.type %v and status %v", s.Name(), a["error.type"].String(), s.Status())
		}
		got[key(op, a["zookeeper.path"].AsString(), a["zookeeper.watch"].AsBool(), int(a["zookeeper.attempt"].AsInt64()),
			a["zookeeper.session.id"].AsString(), msg, parentOf(s.Parent()))]++
	}
	if wait.IsValid() && !strings.Contains(fmt.Sprint(got), "parent=wait") {
		t.Errorf("no request span is a child of the wait's: %v", got)
	}
	if n != len(requests) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%d request spans, the observer heard %d requests:\n spans    %v\n requests %v", n, len(requests), got, want)
	}
	// The duration histogram counts the same requests, by operation and
	// failure.
	hist := tel.histogram(t, "db.client.operation.duration", "s")
	gotHist := map[string]int{}
	total := 0
	for k, c := range hist {
		total += int(c)
		op, failed := "", false
		for _, kv := range splitKey(k) {
			switch kv[0] {
			case "db.operation.name":
				op = kv[1]
			case "error.type":
				failed = true
			case "db.system.name":
				if kv[1] != "zookeeper" {
					t.Errorf("db.system.name=%s", kv[1])
				}
			default:
				t.Errorf("request duration attribute %s: want db.system.name, db.operation.name and error.type alone", kv[0])
			}
		}
		gotHist[fmt.Sprintf("op=%s err=%v", op, failed)] += int(c)
	}
	if total != len(requests) || fmt.Sprint(gotHist) != fmt.Sprint(errs) {
		t.Errorf("request durations %v, want %v", gotHist, errs)
	}
}

func TestLockTakenAndReleasedMakesItsSpansAndMetrics(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	tel := newTelemetry(t)
	rec := &testkit.Recorder{}
	c := testkit.Open(t, ens.Servers(), connection.WithObserver(tee(tel.observer, rec.Observer())))
	ctx, caller := callerCtx(t, tel, 30*time.Second)
	path := root + "/lock"
	a, b := newMutex(t, c, path), newMutex(t, c, path)

	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tel.sum(t, "zkrecipes.hold.active", "{hold}", false); fmt.Sprint(got) != "map[zkrecipes.recipe=mutex:1]" {
		t.Errorf("holds active while a holds: %v, want one mutex hold", got)
	}
	locked := make(chan error, 1)
	go func() { locked <- b.Lock(ctx) }()
	zktest.Eventually(t, 10*time.Second, "b waits", func() error {
		if len(rec.Waits()) != 1 {
			return errors.New("no wait yet")
		}
		return nil
	})
	nodeA, tokenA := a.Node(), a.Token()
	// A change of the holder's data wakes the waiter, which reads the
	// holder's node again: a request made with the wait's context.
	if _, err := ens.Conn(t).Set(nodeA, []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "a request of the wait", func() error {
		for _, r := range rec.Requests() {
			if r.CtxVal == testkit.WaitCtxVal && len(r.Ends) == 1 {
				return nil
			}
		}
		return errors.New("none under the wait's context")
	})
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	nodeB, tokenB := b.Node(), b.Token()
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	session := hexID(c.Session().ID())
	c.Close() // every request answered or ended: each one's span ended

	waits := tel.spansNamed("wait")
	if len(waits) != 1 {
		t.Fatalf("%d wait spans, want b's", len(waits))
	}
	w := waits[0]
	wantSpan(t, w, "mutex wait", trace.SpanKindInternal, caller, codes.Unset, map[string]string{
		"zkrecipes.recipe": "mutex", "zkrecipes.path": path, "zkrecipes.participant": nodeB, "zkrecipes.ahead": "1",
	})
	holds := tel.spansNamed("hold")
	if len(holds) != 2 {
		t.Fatalf("%d hold spans, want a's and b's", len(holds))
	}
	for i, h := range []struct {
		node  string
		token int64
	}{{nodeA, tokenA}, {nodeB, tokenB}} {
		wantSpan(t, holds[i], "mutex hold", trace.SpanKindInternal, caller, codes.Unset, map[string]string{
			"zkrecipes.recipe": "mutex", "zkrecipes.path": path, "zkrecipes.participant": h.node,
			"zkrecipes.token": fmt.Sprint(h.token), "zookeeper.session.id": session, "zkrecipes.cause": "released",
		})
	}
	wantRequestSpans(t, tel, rec, caller, w.SpanContext())

	if got := tel.histogram(t, "zkrecipes.wait.duration", "s"); fmt.Sprint(got) != "map[zkrecipes.recipe=mutex:1]" {
		t.Errorf("wait durations %v, want one of a mutex's wait that got its turn", got)
	}
	if got := tel.histogram(t, "zkrecipes.hold.duration", "s"); fmt.Sprint(got) != "map[zkrecipes.cause=released,zkrecipes.recipe=mutex:2]" {
		t.Errorf("hold durations %v, want two mutex holds released", got)
	}
	if got := tel.sum(t, "zkrecipes.hold.active", "{hold}", false); fmt.Sprint(got) != "map[zkrecipes.recipe=mutex:0]" {
		t.Errorf("holds active after both released: %v, want none", got)
	}
	wantNotifications(t, tel, rec)
	if got := tel.sum(t, "zkrecipes.hold.lost", "{hold}", true); len(got) != 0 {
		t.Errorf("holds lost %v, want none", got)
	}
	// A closed client is in no state.
	if got := tel.sum(t, "zkrecipes.session.state", "{client}", false); fmt.Sprint(got) != "map[zkrecipes.state=connected:0]" {
		t.Errorf("session states %v, want no client counted once closed", got)
	}
}

// wantSpan checks a span's name, kind, parent, status code and the
// attributes in want (values as Value.String writes them).
func wantSpan(t *testing.T, s sdktrace.ReadOnlySpan, name string, kind trace.SpanKind, parent trace.SpanContext, code codes.Code, want map[string]string) {
	t.Helper()
	if s.Name() != name || s.SpanKind() != kind || !s.Parent().Equal(parent) || s.Status().Code != code {
		t.Errorf("span %q kind %v parent %v status %v, want %q kind %v parent %v status %v",
			s.Name(), s.SpanKind(), s.Parent().SpanID(), s.Status(), name, kind, parent.SpanID(), code)
	}
	a := attrs(s)
	for k, v := range want {
		if got, ok := a[attribute.Key(k)]; !ok || got.String() != v {
			t.Errorf("span %q: %s = %q, want %q", name, k, got.String(), v)
		}
	}
	if len(a) != len(want) {
		t.Errorf("span %q has attributes %v, want %v alone", name, s.Attributes(), want)
	}
}

// splitKey splits a setKey into its key/value pairs.
func splitKey(k string) [][2]string {
	var out [][2]string
	for _, p := range strings.Split(k, ",") {
		if key, value, ok := strings.Cut(p, "="); ok {
			out = append(out, [2]string{key, value})
		}
	}
	return out
}

// wantNotifications checks that zkrecipes.notifications counts the
// notifications the Recorder heard, by type, and that there were some.
func wantNotifications(t *testing.T, tel *telemetry, rec *testkit.Recorder) {
	t.Helper()
	names := map[zk.EventType]string{
		zk.EventNodeCreated: "node_created", zk.EventNodeDeleted: "node_deleted",
		zk.EventNodeDataChanged: "node_data_changed", zk.EventNodeChildrenChanged: "node_children_changed",
	}
	want := map[string]int64{}
	for _, n := range rec.Notifications() {
		want["zookeeper.event.type="+names[n.Type]]++
	}
	got := tel.sum(t, "zkrecipes.notifications", "{notification}", true)
	if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("notifications counted %v, the observer heard %v", got, want)
	}
}
