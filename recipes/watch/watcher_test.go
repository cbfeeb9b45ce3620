package watch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func create(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

func set(t *testing.T, conn *zk.Conn, p string, data string) {
	t.Helper()
	if _, err := conn.Set(p, []byte(data), -1); err != nil {
		t.Fatal(err)
	}
}

func del(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	if err := conn.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
}

// TestWatcherReportsEveryChangeOfTheNode: a watcher of a node that does
// not exist yet reports its creation, every data change, every change of
// its children (not of theirs) and its deletion, each time, as long as it
// runs; Close closes Events and leaves the server no watch.
func TestWatcherReportsEveryChangeOfTheNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	node := root + "/node"
	w, err := watch.New(ctxFor(t, time.Minute), c, node)
	if err != nil {
		t.Fatal(err)
	}
	if w.Path() != node || w.Err() != nil {
		t.Fatalf("Path %q, Err %v", w.Path(), w.Err())
	}
	serverWatches(t, ens, c.Session().ID(), 1)
	for range 2 {
		create(t, conn, node)
		set(t, conn, node, "a")
		set(t, conn, node, "b")
		create(t, conn, node+"/c")
		create(t, conn, node+"/c/g")
		set(t, conn, node+"/c", "x")
		del(t, conn, node+"/c/g")
		del(t, conn, node+"/c")
		del(t, conn, node)
		expectEvents(t, w,
			ev(watch.Created, node), ev(watch.Changed, node), ev(watch.Changed, node),
			ev(watch.ChildrenChanged, node), ev(watch.ChildrenChanged, node),
			ev(watch.Deleted, node))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.Events(); ok {
		t.Fatal("events delivered after Close")
	}
	if !errors.Is(w.Err(), watch.ErrClosed) {
		t.Fatalf("Err after Close = %v, want ErrClosed", w.Err())
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	serverWatches(t, ens, c.Session().ID(), 0)
}

// TestRecursiveWatcherReportsTheSubtree: with WithRecursive, every node
// below the path is reported — its creation, data changes and deletion,
// at any depth — and no change of children; under a namespace, in the
// client's paths.
func TestRecursiveWatcherReportsTheSubtree(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers(), connection.WithNamespace(root))
	create(t, conn, root+"/tree")
	w, err := watch.New(ctxFor(t, time.Minute), c, "/tree", watch.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	create(t, conn, root+"/tree/a")
	create(t, conn, root+"/tree/a/b")
	create(t, conn, root+"/tree/a/b/c")
	set(t, conn, root+"/tree/a/b/c", "x")
	set(t, conn, root+"/tree", "y")
	del(t, conn, root+"/tree/a/b/c")
	create(t, conn, root+"/elsewhere")
	expectEvents(t, w,
		ev(watch.Created, "/tree/a"), ev(watch.Created, "/tree/a/b"), ev(watch.Created, "/tree/a/b/c"),
		ev(watch.Changed, "/tree/a/b/c"), ev(watch.Changed, "/tree"), ev(watch.Deleted, "/tree/a/b/c"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	serverWatches(t, ens, c.Session().ID(), 0)
}

// TestWatchersOfOneClient: several watchers on one client — of one path,
// of a node inside another's subtree — each get every event of theirs;
// the server keeps one watch per path until its last watcher closes;
// the other mode on a watched path is refused.
func TestWatchersOfOneClient(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	a1, err := watch.New(ctx, c, root, watch.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close()
	a2, err := watch.New(ctx, c, root, watch.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	b, err := watch.New(ctx, c, root+"/b")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := watch.New(ctx, c, root); !errors.Is(err, watch.ErrModeConflict) {
		t.Fatalf("a watcher of a path watched recursively, without WithRecursive: %v, want ErrModeConflict", err)
	}
	id := c.Session().ID()
	serverWatches(t, ens, id, 2)
	create(t, conn, root+"/b")
	create(t, conn, root+"/b/x")
	for _, w := range []*watch.Watcher{a1, a2} {
		expectEvents(t, w, ev(watch.Created, root+"/b"), ev(watch.Created, root+"/b/x"))
	}
	expectEvents(t, b, ev(watch.Created, root+"/b"), ev(watch.ChildrenChanged, root+"/b"))

	if err := a1.Close(); err != nil {
		t.Fatal(err)
	}
	serverWatches(t, ens, id, 2)
	set(t, conn, root+"/b/x", "1")
	expectEvents(t, a2, ev(watch.Changed, root+"/b/x"))
	expectQuiet(t, b)
	if err := a2.Close(); err != nil {
		t.Fatal(err)
	}
	serverWatches(t, ens, id, 1)
	set(t, conn, root+"/b", "2")
	expectEvents(t, b, ev(watch.Changed, root+"/b"))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	serverWatches(t, ens, id, 0)
}

// TestSlowReaderGetsOverflow: a reader that falls behind by more than the
// buffer gets the buffered events, then Overflow with the number dropped,
// then the events after it caught up.
func TestSlowReaderGetsOverflow(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	w, err := watch.New(ctxFor(t, time.Minute), c, root, watch.WithRecursive(), watch.WithBuffer(2))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const changes = 10
	for i := range changes {
		set(t, conn, root, string(rune('a'+i)))
	}
	// The last change's notification has come once a read of this
	// client's is answered: the server answers in order.
	if _, _, err := c.Get(ctxFor(t, 10*time.Second), root); err != nil {
		t.Fatal(err)
	}
	// One event may already sit in the channel's hand-over: the buffer
	// holds two more.
	var got []watch.Event
	for len(got) == 0 || got[len(got)-1].Type != watch.Overflow {
		select {
		case e := <-w.Events():
			got = append(got, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("no Overflow: %v", got)
		}
	}
	delivered := len(got) - 1
	if delivered < 2 || delivered > 3 || got[delivered].Missed != changes-delivered {
		t.Fatalf("events %v: want 2 or 3 changes then Overflow with the rest missed", got)
	}
	set(t, conn, root, "after")
	expectEvents(t, w, ev(watch.Changed, root))
}

// TestWatcherMisuse: bad arguments and a closed client are errors, never
// panics, and leave nothing behind.
func TestWatcherMisuse(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	for _, tc := range []struct {
		name string
		f    func() error
		want error
	}{
		{"nil client", func() error { _, err := watch.New(ctx, nil, root); return err }, connection.ErrInvalidOption},
		{"nil context", func() error {
			var nilCtx context.Context
			_, err := watch.New(nilCtx, c, root)
			return err
		}, connection.ErrInvalidOption},
		{"relative path", func() error { _, err := watch.New(ctx, c, "x"); return err }, connection.ErrInvalidPath},
		{"trailing slash", func() error { _, err := watch.New(ctx, c, root+"/"); return err }, connection.ErrInvalidPath},
		{"buffer 0", func() error { _, err := watch.New(ctx, c, root, watch.WithBuffer(0)); return err }, connection.ErrInvalidOption},
		{"nil option", func() error { _, err := watch.New(ctx, c, root, nil); return err }, connection.ErrInvalidOption},
		{"ended context", func() error {
			done, cancel := context.WithCancel(ctx)
			cancel()
			_, err := watch.New(done, c, root)
			return err
		}, context.Canceled},
	} {
		if err := tc.f(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	serverWatches(t, ens, c.Session().ID(), 0)
	// A failed New leaves no subscriber: the other mode is taken now.
	if w, err := watch.New(ctx, c, root, watch.WithRecursive()); err != nil {
		t.Fatal(err)
	} else if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	c2 := open(t, ens.Servers())
	w, err := watch.New(ctx, c2, root)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	select {
	case _, ok := <-w.Events():
		if ok {
			t.Fatal("an event after the client closed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("events not closed with the client")
	}
	if !errors.Is(w.Err(), connection.ErrClosed) {
		t.Fatalf("Err after the client closed = %v, want connection.ErrClosed", w.Err())
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close after the client closed: %v", err)
	}
	if _, err := watch.New(ctx, c2, root); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("New on a closed client: %v, want connection.ErrClosed", err)
	}
}

// TestCloseLeavesTheServerNoWatch: on a server of its own, so that mntr
// counts this client's watches alone, a watcher in either mode leaves the
// server no watch of any kind once closed.
func TestCloseLeavesTheServerNoWatch(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t)
	conn := ens.Conn(t)
	create(t, conn, "/w")
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	for _, opts := range [][]watch.Option{{watch.WithRecursive()}, nil} {
		w, err := watch.New(ctx, c, "/w", opts...)
		if err != nil {
			t.Fatal(err)
		}
		if n := mntrWatchCount(t, ens); n == 0 {
			t.Fatal("no watch on the server while the watcher runs")
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		zktest.Eventually(t, 10*time.Second, "no watch left", func() error {
			if n := mntrWatchCount(t, ens); n != 0 {
				return fmt.Errorf("the server holds %d watches after Close, want none", n)
			}
			return nil
		})
	}
}
