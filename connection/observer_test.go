package connection_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestWithObserverRefusesNil(t *testing.T) {
	_, err := connection.Open(context.Background(), []string{"127.0.0.1:1"}, connection.WithObserver(nil))
	if !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("WithObserver(nil): %v, want ErrInvalidOption", err)
	}
}

// requestsUnder returns the recorded requests of paths under prefix, and
// the transactions (no path).
func requestsUnder(rec *testkit.Recorder, prefix string) []testkit.Recorded[connection.Request, connection.RequestDone] {
	var out []testkit.Recorded[connection.Request, connection.RequestDone]
	for _, r := range rec.Requests() {
		if strings.HasPrefix(r.Begin.Path, prefix) || r.Begin.Op == "multi" {
			out = append(out, r)
		}
	}
	return out
}

func TestObserverHearsEachRequestOfEveryOperation(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithNamespace(root), connection.WithObserver(rec.Observer()))
	ctx := context.WithValue(ctxFor(t, 20*time.Second), testkit.CtxKey{}, "caller")

	if _, err := c.Create(ctx, "/a", []byte("x"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := c.Get(ctx, "/a")
	must(err)
	_, err = c.Set(ctx, "/a", []byte("y"), -1)
	must(err)
	_, _, err = c.Children(ctx, "/a")
	must(err)
	_, _, err = c.Exists(ctx, "/a/x")
	must(err)
	if _, _, err := c.Get(ctx, "/a/x"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("get of a missing node: %v", err)
	}
	_, _, _, err = c.GetWatch(ctx, "/a")
	must(err)
	must(c.Sync(ctx, "/a"))
	_, err = c.Multi(ctx, &zk.CreateRequest{Path: "/a/m", Flags: zk.FlagPersistent}, &zk.DeleteRequest{Path: "/a/m", Version: -1})
	must(err)
	must(c.Delete(ctx, "/a", -1))

	sp := root + "/a"
	want := []struct {
		op, path string
		watch    bool
		err      error
	}{
		{"create", sp, false, nil},
		{"getData", sp, false, nil},
		{"setData", sp, false, nil},
		{"getChildren2", sp, false, nil},
		{"exists", sp + "/x", false, nil},
		{"getData", sp + "/x", false, zk.ErrNoNode},
		{"getData", sp, true, nil},
		{"sync", sp, false, nil},
		{"multi", "", false, nil},
		{"delete", sp, false, nil},
	}
	got := requestsUnder(rec, sp)
	testkit.OnceEnded(t, "request", got)
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d: %+v", len(got), len(want), got)
	}
	id := c.Session().ID()
	for i, w := range want {
		g := got[i]
		if g.Begin.Op != w.op || g.Begin.Path != w.path || g.Begin.Watch != w.watch {
			t.Errorf("request %d = %s %q watch %v, want %s %q watch %v", i, g.Begin.Op, g.Begin.Path, g.Begin.Watch, w.op, w.path, w.watch)
		}
		if g.Begin.SessionID != id || g.Begin.Attempt != 1 || g.CtxVal != "caller" {
			t.Errorf("request %d: session %#x attempt %d ctx value %v, want %#x, 1, the caller's", i, g.Begin.SessionID, g.Begin.Attempt, g.CtxVal, id)
		}
		if len(g.Ends) == 1 && !errors.Is(g.Ends[0].Err, w.err) || w.err == nil && g.Ends[0].Err != nil {
			t.Errorf("request %d (%s): outcome %v, want %v", i, w.op, g.Ends[0].Err, w.err)
		}
	}
}

func TestObserverHearsRequestsSentOnTheWire(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, 20*time.Second)
	if err := c.EnsurePath(ctx, root+"/lock"); err != nil {
		t.Fatal(err)
	}
	created, err := c.CreateProtected(ctx, root+"/lock/lock-", nil, connection.EphemeralSequential)
	if err != nil {
		t.Fatal(err)
	}
	got := requestsUnder(rec, root+"/lock/")
	testkit.OnceEnded(t, "request", got)
	if len(got) != 1 || got[0].Begin.Op != "create2" || !strings.HasPrefix(created.Path, got[0].Begin.Path[:strings.LastIndexByte(got[0].Begin.Path, '-')]) {
		t.Fatalf("requests of the protected create: %+v, want one create2 of %s", got, created.Path)
	}
	// A create2 request: header, path, data, ACL, flags; its reply: header,
	// the path made and a Stat of 68 bytes.
	if b := got[0].Begin.Bytes; b < 4+8+4+len(got[0].Begin.Path) {
		t.Errorf("create2 request bytes %d: shorter than its header and path", b)
	}
	if b := got[0].Ends[0].Bytes; b != 4+16+4+len(created.Path)+68 {
		t.Errorf("create2 reply bytes %d, want %d", b, 4+16+4+len(created.Path)+68)
	}

	// A listing answered through a callback, and reads in bulk with their
	// watches.
	before := len(rec.Requests())
	listed := make(chan error, 1)
	connx.Of(c).ChildrenThen(ctx, root+"/lock", func(_ []string, _ *zk.Stat, err error) { listed <- err })
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
	if _, err := connx.Of(c).ReadWatchMany(ctx, []connx.BulkRead{{Path: root + "/lock", Children: true}}); err != nil {
		t.Fatal(err)
	}
	onWire := rec.Requests()[before:]
	testkit.OnceEnded(t, "request", onWire)
	want := []struct {
		op, path string
		watch    bool
	}{{"getChildren2", root + "/lock", false}, {"multiRead", "", false}, {"setWatches", "", true}}
	if len(onWire) != len(want) {
		t.Fatalf("requests %+v, want %d", onWire, len(want))
	}
	for i, w := range want {
		g := onWire[i]
		if g.Begin.Op != w.op || g.Begin.Path != w.path || g.Begin.Watch != w.watch || g.Begin.Bytes == 0 || g.Ends[0].Err != nil || g.Ends[0].Bytes < 4+16 {
			t.Errorf("request %d = %+v %+v, want %s %q watch %v answered, with its sizes", i, g.Begin, g.Ends, w.op, w.path, w.watch)
		}
	}
}

func TestObserverReportsEachAttemptOfALostAnswerOnce(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithObserver(rec.Observer()))
	watcher := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Create(ctx, root+"/n", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}

	p.DropReplies()
	done := make(chan error, 1)
	go func() {
		_, err := c.Set(ctx, root+"/n", []byte("v"), -1)
		done <- err
	}()
	zktest.Eventually(t, 10*time.Second, "the set applied on the server", func() error {
		data, _, err := watcher.Get(root + "/n")
		if err != nil || string(data) != "v" {
			return fmt.Errorf("data %q, %v", data, err)
		}
		return nil
	})
	p.Restore() // closes the connection that lost the answer: the set is tried again
	if err := <-done; err != nil {
		t.Fatalf("set after a lost answer: %v", err)
	}
	_, st, err := watcher.Get(root + "/n")
	if err != nil {
		t.Fatal(err)
	}
	got := requestsUnder(rec, root+"/n")[1:] // after the create
	testkit.OnceEnded(t, "request", got)
	if len(got) != 2 {
		t.Fatalf("requests of the set: %+v, want two attempts", got)
	}
	first, second := got[0], got[1]
	if first.Begin.Op != "setData" || first.Begin.Attempt != 1 || !errors.Is(first.Ends[0].Err, zk.ErrConnectionClosed) {
		t.Errorf("first attempt: %+v %+v, want setData attempt 1 failed with the connection", first.Begin, first.Ends)
	}
	if second.Begin.Op != "setData" || second.Begin.Attempt != 2 || second.Ends[0].Err != nil {
		t.Errorf("second attempt: %+v %+v, want setData attempt 2 answered", second.Begin, second.Ends)
	}
	if st.Version != 2 {
		t.Errorf("server's version %d, want 2: both attempts applied", st.Version)
	}
}

func TestObserverHearsEachNotificationOnce(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	other := ens.Conn(t)
	ctx := ctxFor(t, 20*time.Second)
	n := root + "/n"
	if _, err := c.Create(ctx, n, nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	// A data watch and an exists watch of one node: one notification
	// fires both.
	_, _, wData, err := c.GetWatch(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	_, _, wExists, err := c.ExistsWatch(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	_, _, wChild, err := c.ChildrenWatch(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Set(n, []byte("v"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(n+"/k", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*connection.Watch{wData, wExists, wChild} {
		select {
		case <-w.Done():
		case <-ctx.Done():
			t.Fatal("a watch never fired")
		}
	}
	id := c.Session().ID()
	want := []connection.Notification{
		{Type: zk.EventNodeDataChanged, Path: n, SessionID: id},
		{Type: zk.EventNodeChildrenChanged, Path: n, SessionID: id},
	}
	var got []connection.Notification
	for _, g := range rec.Notifications() {
		if strings.HasPrefix(g.Path, root) {
			if g.SinceWatch <= 0 {
				t.Errorf("notification %+v: no time since its watch was set", g)
			}
			g.SinceWatch = 0
			got = append(got, g)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("notifications %+v, want %+v", got, want)
	}
}

// TestObserverHearsTheTimeSinceTheFiredWatchWasSet: a notification's
// SinceWatch is the age of the oldest watch it fires — at least the time
// waited between the read that set it and the change, at most the time
// from before that read to the notification — and 0 when it fires no
// watch of the client's table (a cache's own).
func TestObserverHearsTheTimeSinceTheFiredWatchWasSet(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	other := ens.Conn(t)
	ctx := ctxFor(t, 20*time.Second)
	n := root + "/n"
	if _, err := c.Create(ctx, n, nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	const waited = 400 * time.Millisecond
	before := time.Now()
	_, _, first, err := c.GetWatch(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(waited)
	// A second watch of another kind, younger: the notification reports
	// the older.
	if _, _, _, err := c.ExistsWatch(ctx, n); err != nil {
		t.Fatal(err)
	}
	time.Sleep(waited)
	if _, err := other.Set(n, []byte("v"), -1); err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	within := time.Since(before)
	var got []connection.Notification
	for _, g := range rec.Notifications() {
		if g.Path == n {
			got = append(got, g)
		}
	}
	if len(got) != 1 || got[0].Type != zk.EventNodeDataChanged {
		t.Fatalf("notifications of %s: %+v, want one data change", n, got)
	}
	if s := got[0].SinceWatch; s < 2*waited || s > within {
		t.Errorf("SinceWatch %v, want between %v and %v", s, 2*waited, within)
	}
}

// TestObserverHearsTheClientsCloseOnceAfterItsStates: Close tells
// Closed once, with the session it ended, after every state change and
// with none after it; a second Close tells nothing.
func TestObserverHearsTheClientsCloseOnceAfterItsStates(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	rec := &testkit.Recorder{}
	c, err := connection.Open(ctxFor(t, 20*time.Second), ens.Servers(), connection.WithObserver(rec.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	id := c.Session().ID()
	if got := rec.Closes(); len(got) != 0 {
		t.Fatalf("closes before Close: %+v", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	states := rec.States()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := rec.Closes(); len(got) != 1 || got[0].SessionID != id {
		t.Fatalf("closes %+v, want one of session %#x", got, id)
	}
	if got := rec.States(); len(got) != len(states) || len(got) != 1 || got[0].State != connection.Connected {
		t.Errorf("state changes %+v, want the one CONNECTED and none after the close", got)
	}
}

// TestObserverSeesTheCallersContextInAMissingParentsCreates: a protected
// create whose parents are missing makes them with requests whose
// context carries the caller's values, as its own create's does.
func TestObserverSeesTheCallersContextInAMissingParentsCreates(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	ctx := context.WithValue(ctxFor(t, 20*time.Second), testkit.CtxKey{}, "caller")
	if _, err := c.CreateProtected(ctx, root+"/p/q/lock-", nil, connection.EphemeralSequential); err != nil {
		t.Fatal(err)
	}
	got := requestsUnder(rec, root+"/p")
	testkit.OnceEnded(t, "request", got)
	var ops []string
	for _, g := range got {
		name := strings.TrimPrefix(g.Begin.Path, root)
		if strings.Contains(name, "/"+connection.ProtectedPrefix) {
			name = name[:strings.LastIndexByte(name, '/')] + "/<protected>"
		}
		ops = append(ops, g.Begin.Op+" "+name)
		if g.CtxVal != "caller" {
			t.Errorf("request %s %s: context value %v, want the caller's", g.Begin.Op, g.Begin.Path, g.CtxVal)
		}
	}
	// The create, NoNode; the parents from the nearest; the create again.
	want := []string{"create2 /p/q/<protected>", "createContainer /p/q", "createContainer /p", "createContainer /p/q", "create2 /p/q/<protected>"}
	if fmt.Sprint(ops) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", ops, want)
	}
}

func TestObserverHearsOneSuspendedThenOneLostPerCut(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second), connection.WithObserver(rec.Observer()))
	states := c.Listen(ctxFor(t, 60*time.Second))
	first := c.Session().ID()

	// A short cut: the session survives.
	p.Cut()
	expect(t, states, 10*time.Second, connection.Suspended)
	p.Restore()
	expect(t, states, 20*time.Second, connection.Reconnected)
	// A cut longer than the session timeout: the session is lost.
	p.Cut()
	expect(t, states, 10*time.Second, connection.Suspended, connection.Lost)
	p.Restore()
	expect(t, states, 20*time.Second, connection.Reconnected)
	second := c.Session().ID()

	got := rec.States()
	want := []struct {
		state connection.State
		id    int64
		cause error
	}{
		{connection.Connected, first, nil},
		{connection.Suspended, first, connection.ErrSuspended},
		{connection.Reconnected, first, nil},
		{connection.Suspended, first, connection.ErrSuspended},
		{connection.Lost, first, connection.ErrSessionLost},
		{connection.Reconnected, second, nil},
	}
	if len(got) != len(want) {
		t.Fatalf("state changes %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.State != w.state || g.SessionID != w.id || (w.cause == nil) != (g.Cause == nil) || !errors.Is(g.Cause, w.cause) && w.cause != nil {
			t.Errorf("state change %d = %v %#x %v, want %v %#x %v", i, g.State, g.SessionID, g.Cause, w.state, w.id, w.cause)
		}
	}
	if first == second {
		t.Errorf("the lost session %#x was resumed", first)
	}
}

func TestObserverHearsTheCredentialsSent(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithDigestAuth("user", "secret"), connection.WithObserver(rec.Observer()))
	var auths []testkit.Recorded[connection.Request, connection.RequestDone]
	for _, r := range rec.Requests() {
		if r.Begin.Op == "auth" {
			auths = append(auths, r)
		}
	}
	testkit.OnceEnded(t, "request", auths)
	if len(auths) != 1 || auths[0].Begin.SessionID != c.Session().ID() || auths[0].Ends[0].Err != nil {
		t.Fatalf("auth requests %+v, want one answered in session %#x", auths, c.Session().ID())
	}
}
