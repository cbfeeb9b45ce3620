package zkprom

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// observed opens a client on servers whose observer records into a new
// registry (constant label client="test") and into a told.
func observed(t *testing.T, servers []string, opts ...connection.Option) (*connection.Client, *prometheus.Registry, *told) {
	t.Helper()
	reg := prometheus.NewRegistry()
	obs, err := NewObserver(reg, WithConstLabels(prometheus.Labels{"client": "test"}))
	if err != nil {
		t.Fatal(err)
	}
	tl := newTold()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, servers, append(opts, connection.WithObserver(tl.tee(obs)))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, reg, tl
}

func newMutex(t *testing.T, c *connection.Client, path string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// wantRequests fails t unless the request series are exactly the
// requests the client told of, every one ended (the client is closed).
func wantRequests(t *testing.T, reg *prometheus.Registry, tl *told) {
	t.Helper()
	tl.mu.Lock()
	want, begun := counts(tl.requests), tl.begun
	tl.mu.Unlock()
	var ended float64
	for _, n := range want {
		ended += n
	}
	if int(ended) != begun || begun == 0 {
		t.Errorf("%d requests begun, %g ended, want as many and some", begun, ended)
	}
	wantSeries(t, reg, "zkrecipes_request_duration_seconds", want)
	wantSeries(t, reg, "zkrecipes_requests_in_flight", map[string]float64{"": 0})
}

// TestLockTakenAndReleasedIsRecorded: two contenders take a lock in turn
// and release it; the series show one wait that got its turn, two holds
// begun and ended, none lost, one session, and each request by operation
// and result.
func TestLockTakenAndReleasedIsRecorded(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c, reg, tl := observed(t, ens.Servers())
	ctx := testCtx(t)
	m1, m2 := newMutex(t, c, root+"/lock"), newMutex(t, c, root+"/lock")

	wantSeries(t, reg, "zkrecipes_session_state", stateSeries(connection.Connected))
	wantSeries(t, reg, "zkrecipes_session_changes_total", map[string]float64{"CONNECTED": 1})

	if err := m1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, reg, "zkrecipes_holds", map[string]float64{"mutex": 1})
	wantSeries(t, reg, "zkrecipes_hold_wait_seconds", map[string]float64{})

	locked := make(chan error, 1)
	go func() { locked <- m2.Lock(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		tl.mu.Lock()
		waiting := tl.waiting
		tl.mu.Unlock()
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second contender did not begin waiting")
		}
	}
	wantSeries(t, reg, "zkrecipes_hold_wait_seconds", map[string]float64{}) // observed when the wait ends
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	wantSeries(t, reg, "zkrecipes_holds", map[string]float64{"mutex": 1})
	wantSeries(t, reg, "zkrecipes_hold_wait_seconds", map[string]float64{"mutex,ok": 1})
	wantSeries(t, reg, "zkrecipes_hold_duration_seconds", map[string]float64{"mutex": 1})
	if err := m2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wantSeries(t, reg, "zkrecipes_holds", map[string]float64{"mutex": 0})
	wantSeries(t, reg, "zkrecipes_hold_duration_seconds", map[string]float64{"mutex": 2})
	if n := testutil.CollectAndCount(reg, "zkrecipes_holds_lost_total"); n != 0 {
		t.Errorf("zkrecipes_holds_lost_total: %d series, want none", n)
	}

	c.Close()
	tl.mu.Lock()
	holds, ends, waits := counts(tl.holds), counts(tl.ends), counts(tl.waits)
	tl.mu.Unlock()
	if holds["mutex"] != 2 || ends["mutex"] != 2 || waits["mutex,ok"] != 1 || len(waits) != 1 {
		t.Errorf("told %v holds, %v ends, %v waits; want 2, 2 and one that got its turn", holds, ends, waits)
	}
	wantRequests(t, reg, tl)
	for _, op := range []string{"create2", "getChildren2", "delete"} {
		if _, ok := series(t, reg, "zkrecipes_request_duration_seconds")[op+",ok"]; !ok {
			t.Errorf("no series {op=%q,result=\"ok\"} among %v", op, sorted(series(t, reg, "zkrecipes_request_duration_seconds")))
		}
	}
}

// TestHoldLostByCutIsRecorded: a holder cut off from the ensemble for
// longer than its session timeout loses its hold to the suspension (the
// standard error policy): one hold lost with cause suspended, none held,
// and the session's course SUSPENDED, LOST, then RECONNECTED with a new
// session once the cut heals.
func TestHoldLostByCutIsRecorded(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c, reg, tl := observed(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	ctx := testCtx(t)
	m := newMutex(t, c, root+"/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	sess := c.Session()
	p.Blackhole()
	<-m.Done()
	wantSeries(t, reg, "zkrecipes_holds", map[string]float64{"mutex": 0})
	wantSeries(t, reg, "zkrecipes_holds_lost_total", map[string]float64{"suspended,mutex": 1})
	wantSeries(t, reg, "zkrecipes_hold_duration_seconds", map[string]float64{"mutex": 1})
	<-sess.Done()
	p.Restore()
	eventually(t, reg, "zkrecipes_session_state", stateSeries(connection.Reconnected), 30*time.Second)
	wantSeries(t, reg, "zkrecipes_session_changes_total",
		map[string]float64{"CONNECTED": 1, "SUSPENDED": 1, "LOST": 1, "RECONNECTED": 1})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(cutSeries),
		"zkrecipes_holds", "zkrecipes_holds_lost_total", "zkrecipes_session_state", "zkrecipes_session_changes_total"); err != nil {
		t.Error(err)
	}

	c.Close()
	tl.mu.Lock()
	gotStates := append([]connection.State(nil), tl.states...)
	lost := counts(tl.lost)
	tl.mu.Unlock()
	wantStates := []connection.State{connection.Connected, connection.Suspended, connection.Lost, connection.Reconnected}
	if len(gotStates) != len(wantStates) {
		t.Errorf("states told %v, want %v", gotStates, wantStates)
	} else {
		for i := range wantStates {
			if gotStates[i] != wantStates[i] {
				t.Errorf("states told %v, want %v", gotStates, wantStates)
				break
			}
		}
	}
	if len(lost) != 1 || lost["suspended,mutex"] != 1 {
		t.Errorf("holds lost told %v, want one suspended", lost)
	}
	wantRequests(t, reg, tl)
}

// cutSeries is what TestHoldLostByCutIsRecorded's holder shows once its
// client has a new session, in the text format a scrape returns.
const cutSeries = `
# HELP zkrecipes_holds Holds held now (locks, leases, leaders' terms, queue items taken), by recipe.
# TYPE zkrecipes_holds gauge
zkrecipes_holds{client="test",recipe="mutex"} 0
# HELP zkrecipes_holds_lost_total Holds that ended otherwise than by their release, by recipe and cause (suspended, session_lost, node_deleted, other).
# TYPE zkrecipes_holds_lost_total counter
zkrecipes_holds_lost_total{cause="suspended",client="test",recipe="mutex"} 1
# HELP zkrecipes_session_changes_total Changes of the client's connection state, by the state entered.
# TYPE zkrecipes_session_changes_total counter
zkrecipes_session_changes_total{client="test",state="CONNECTED"} 1
zkrecipes_session_changes_total{client="test",state="LOST"} 1
zkrecipes_session_changes_total{client="test",state="RECONNECTED"} 1
zkrecipes_session_changes_total{client="test",state="SUSPENDED"} 1
# HELP zkrecipes_session_state The client's connection state: 1 for the current state, 0 for the others; all 0 before the first session and once the client is closed.
# TYPE zkrecipes_session_state gauge
zkrecipes_session_state{client="test",state="CONNECTED"} 0
zkrecipes_session_state{client="test",state="LOST"} 0
zkrecipes_session_state{client="test",state="READ_ONLY"} 0
zkrecipes_session_state{client="test",state="RECONNECTED"} 1
zkrecipes_session_state{client="test",state="SUSPENDED"} 0
`
