package shared_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// waitData waits until the node at p holds want, as the server says it.
func waitData(t *testing.T, conn *zk.Conn, p string, want []byte) {
	t.Helper()
	zktest.Eventually(t, 20*time.Second, "the write lands", func() error {
		data, _, err := conn.Get(p)
		if err == nil && !bytes.Equal(data, want) {
			err = fmt.Errorf("data %q, want %q", data, want)
		}
		return err
	})
}

// addedThenDropped adds 1 to cn (opts: the add's guard), then has the
// proxy drop every answer from the moment cn's next write is about to be
// sent; it returns c's session of the first add.
func addedThenDropped(t *testing.T, ctx context.Context, c *connection.Client, cn *shared.Counter, proxy *zktest.Proxy, opts ...shared.WriteOption) *connection.Session {
	t.Helper()
	if _, err := cn.Add(ctx, 1, opts...); err != nil {
		t.Fatal(err)
	}
	sess := c.Session()
	var once sync.Once
	shared.BeforeWrite(cn, func() { once.Do(proxy.DropReplies) })
	return sess
}

// oneOutcome fails t unless rec heard exactly one counter outcome: of
// path p, settled (applied or not) or unknown as want says, with the
// context of the add (its CtxKey value "add").
func oneOutcome(t *testing.T, rec *testkit.Recorder, p string, want connection.CounterOutcome) {
	t.Helper()
	got := rec.CounterOutcomes()
	if len(got) != 1 {
		t.Fatalf("counter outcomes %+v, want one", got)
	}
	g := got[0]
	if g.Begin.Path != p || g.Begin.Settled != want.Settled || g.Begin.Applied != want.Applied || g.CtxVal != "add" ||
		want.Settled != (g.Begin.Err == nil) || !want.Settled && !errors.Is(g.Begin.Err, connection.ErrOutcomeUnknown) {
		t.Errorf("counter outcome %+v (context value %v), want %+v of %s in the add's context", g.Begin, g.CtxVal, want, p)
	}
}

// addResult is the answer of an add.
type addResult struct {
	res shared.Result
	err error
}

// addAsync adds n to cn in the background; the answer comes on the
// channel returned.
func addAsync(ctx context.Context, cn *shared.Counter, n int64, opts ...shared.WriteOption) <-chan addResult {
	done := make(chan addResult, 1)
	go func() {
		res, err := cn.Add(ctx, n, opts...)
		done <- addResult{res, err}
	}()
	return done
}

// TestAddLostAnswerApplied: the add reaches the server, its answer is
// lost; once connected again in the same session, the marker says it
// applied: Succeeded, counted once, tried once.
func TestAddLostAnswerApplied(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	p := ens.Root(t) + "/c"
	proxy := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second), connection.WithObserver(rec.Observer()))
	conn := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	cn := newCounter(t, c, p, shared.WithEncoding(shared.Text))
	sess := addedThenDropped(t, ctx, c, cn, proxy)
	done := addAsync(context.WithValue(ctx, testkit.CtxKey{}, "add"), cn, 10)
	waitData(t, conn, p, []byte("11"))
	proxy.Restore()
	r := <-done
	if r.err != nil || !r.res.Succeeded || r.res.Pre != 1 || r.res.Post != 11 || r.res.OptimisticTries != 1 {
		t.Fatalf("Add after a lost answer = %+v, %v; want succeeded once", r.res, r.err)
	}
	if c.Session() != sess {
		t.Fatal("the session changed: the test did not exercise the same-session case")
	}
	oneOutcome(t, rec, p, connection.CounterOutcome{Settled: true, Applied: true})
	if n, err := cn.Get(ctx); n != 11 || err != nil {
		t.Fatalf("counter %d, %v; want 11", n, err)
	}
	// The marker's version moved with the adds and nothing else.
	if res, err := cn.Add(ctx, 100); err != nil || res.Post != 111 {
		t.Fatalf("next Add = %+v, %v", res, err)
	}
}

// TestAddLostRequestNotApplied: the add never reaches the server and the
// connection breaks: the marker says it did not apply, and it is sent
// again — counted once.
func TestAddLostRequestNotApplied(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	p := ens.Root(t) + "/c"
	proxy := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, time.Minute)
	cn := newCounter(t, c, p)
	if _, err := cn.Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	sess := c.Session()
	var once sync.Once
	shared.BeforeWrite(cn, func() {
		once.Do(func() {
			proxy.DropRequests()
			// The write is sent into the drop; then the connection
			// breaks (Restore closes it).
			time.AfterFunc(300*time.Millisecond, proxy.Restore)
		})
	})
	done := make(chan error, 1)
	var res shared.Result
	go func() {
		var err error
		res, err = cn.Add(context.WithValue(ctx, testkit.CtxKey{}, "add"), 10)
		done <- err
	}()
	if err := <-done; err != nil || !res.Succeeded || res.Post != 11 {
		t.Fatalf("Add = %+v, %v", res, err)
	}
	if c.Session() != sess {
		t.Fatal("the session changed")
	}
	if n, _ := cn.Get(ctx); n != 11 {
		t.Fatalf("counter %d, want 11", n)
	}
	if res.OptimisticTries != 2 {
		t.Fatalf("%d tries; want 2: the lost one, settled as not applied, and the one answered", res.OptimisticTries)
	}
	oneOutcome(t, rec, p, connection.CounterOutcome{Settled: true, Applied: false})
}

// TestAddOutcomeUnknownAfterSessionLoss: the add applies, its answer is
// lost, and the session ends before the client hears anything: the
// outcome cannot be read any more, and the error says so — never success,
// never a retry that would count it twice.
func TestAddOutcomeUnknownAfterSessionLoss(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	p := ens.Root(t) + "/c"
	proxy := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second), connection.WithObserver(rec.Observer()))
	conn := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	cn := newCounter(t, c, p, shared.WithEncoding(shared.Int32))
	// The server hears pings: only the client can give the session up.
	sess := addedThenDropped(t, ctx, c, cn, proxy)
	done := make(chan error, 1)
	var res shared.Result
	go func() {
		var err error
		res, err = cn.Add(context.WithValue(ctx, testkit.CtxKey{}, "add"), 10)
		done <- err
	}()
	waitData(t, conn, p, []byte{0, 0, 0, 11})
	select {
	case <-sess.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the session was not given up")
	}
	proxy.Restore()
	err := <-done
	if !errors.Is(err, connection.ErrOutcomeUnknown) || res.Succeeded {
		t.Fatalf("Add after the session was lost = %+v, %v; want ErrOutcomeUnknown", res, err)
	}
	oneOutcome(t, rec, p, connection.CounterOutcome{Settled: false})
	if n, _ := cn.Get(ctx); n != 11 {
		t.Fatalf("counter %d, want 11 (the add applied once)", n)
	}
	// The Counter goes on in the next session, with a new marker.
	if res, err := cn.Add(ctx, 100); err != nil || res.Post != 111 {
		t.Fatalf("Add in the next session = %+v, %v", res, err)
	}
	// The old session's marker goes with it: one marker is left.
	zktest.Eventually(t, 20*time.Second, "the old marker goes", func() error {
		kids, _, err := conn.Children(p)
		if err == nil && len(kids) != 1 {
			err = fmt.Errorf("children %v", kids)
		}
		return err
	})
}

// TestTrySetLostAnswer: a compare-and-set whose answer was lost after it
// applied cannot be told from another participant's identical write: the
// error says the outcome is unknown. One that another write beat is
// ErrChanged.
func TestTrySetLostAnswer(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	conn := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	count, _ := shared.NewCount(c, root+"/n", 0)
	prev, err := count.Set(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctx)
	proxy.DropReplies()
	done := make(chan error, 1)
	go func() {
		_, err := count.TrySet(ctx, prev, 2)
		done <- err
	}()
	waitData(t, conn, root+"/n", []byte{0, 0, 0, 2})
	// Applied, as another client sees it; but its answer may not have
	// reached the proxy yet, and would pass once it is restored. Once the
	// client is suspended (no answer for 2/3 of the session timeout), the
	// answer was dropped, and Restore closes the connection that lost it.
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	proxy.Restore()
	if err := <-done; !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Fatalf("TrySet whose answer was lost = %v, want ErrOutcomeUnknown", err)
	}

	// The request is lost, another participant writes first; the
	// client's own retry in the session gets BadVersion, and the read
	// shows another's data: ErrChanged.
	prev, err = count.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxy.DropRequests()
	go func() {
		_, err := count.TrySet(ctx, prev, 3)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if _, err := conn.Set(root+"/n", []byte{0, 0, 0, 7}, prev.Version); err != nil {
		t.Fatal(err)
	}
	proxy.Restore()
	if err := <-done; !errors.Is(err, shared.ErrChanged) {
		t.Fatalf("TrySet beaten by another write = %v, want ErrChanged", err)
	}
}

// TestSettleCAS: what a read in the same session says of a lost
// compare-and-set, case by case (the table in docs/shared.md).
func TestSettleCAS(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	conn := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	p := root + "/v"
	if _, err := conn.Create(p, []byte("a"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := conn.Set(p, []byte("a"), -1); err != nil {
			t.Fatal(err)
		}
	}
	_, st, err := conn.Get(p) // version 3, data "a"
	if err != nil || st.Version != 3 {
		t.Fatal(st, err)
	}
	type want int
	const (
		again want = iota
		changed
		unknown
	)
	for _, tc := range []struct {
		name  string
		path  string
		prev  int32
		czxid int64
		data  string
		want  want
	}{
		{"still at the version given", p, 3, st.Czxid, "b", again},
		{"the next version, other data", p, 2, st.Czxid, "b", changed},
		{"the next version, the same data", p, 2, st.Czxid, "a", unknown},
		{"further on", p, 1, st.Czxid, "b", unknown},
		{"another node at the path", p, 3, st.Czxid + 1, "b", unknown},
		{"czxid not known", p, 3, 0, "b", again},
		{"a create, the node absent", root + "/absent", -1, 0, "b", again},
		{"a create, the node at 0 with other data", root + "/fresh", -1, 0, "b", changed},
		{"a create, the node at 0 with the same data", root + "/fresh", -1, 0, "f", unknown},
		{"a set, the node absent", root + "/absent", 3, 0, "b", unknown},
	} {
		if tc.path == root+"/fresh" {
			if _, err := conn.Create(tc.path, []byte("f"), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
		ok, err := shared.SettleCAS(ctx, c, tc.path, tc.prev, tc.czxid, []byte(tc.data))
		got := unknown
		switch {
		case err == nil && ok:
			got = again
		case err == nil:
			got = changed
		case !errors.Is(err, connection.ErrOutcomeUnknown):
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: again %v, %v; want %d", tc.name, ok, err, tc.want)
		}
	}
	// Once the session is gone, nothing is settled.
	c2 := open(t, ens.Servers())
	sess := c2.Session()
	c2.Close()
	if _, err := shared.SettleCASIn(ctx, c2, sess, p, 3, st.Czxid, []byte("b")); !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Errorf("settled after the session ended: %v", err)
	}
}
