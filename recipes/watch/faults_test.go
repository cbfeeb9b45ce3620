package watch_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestWatcherSetAgainAfterReconnect: a connection cut drops the server's
// watch with it; once the client is back in the same session, the
// watcher sets it again and sends Resync (a change made while it was cut
// off is not reported), and reports every change after.
func TestWatcherSetAgainAfterReconnect(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := ctxFor(t, time.Minute)
	w, err := watch.New(ctx, c, root, watch.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	id := c.Session().ID()
	states := c.Listen(ctx)
	proxy.Cut()
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	serverWatches(t, ens, id, 0)
	create(t, conn, root+"/while-cut")
	proxy.Restore()
	testkit.WaitState(t, states, connection.Reconnected, 30*time.Second)
	expectEvents(t, w, ev(watch.Resync, root))
	if c.Session().ID() != id {
		t.Fatalf("session %#x after the cut, want the same %#x", c.Session().ID(), id)
	}
	serverWatches(t, ens, id, 1)
	set(t, conn, root+"/while-cut", "x")
	create(t, conn, root+"/after")
	expectEvents(t, w, ev(watch.Changed, root+"/while-cut"), ev(watch.Created, root+"/after"))
}

// TestWatcherSetDespiteLostAnswer: an addWatch the server applied and
// whose answer was lost is set again on the next connection: New returns
// once the watch is set there, and the server holds one watch.
func TestWatcherSetDespiteLostAnswer(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := ctxFor(t, time.Minute)
	id := c.Session().ID()
	states := c.Listen(ctx)
	proxy.DropReplies()
	type result struct {
		w   *watch.Watcher
		err error
	}
	done := make(chan result, 1)
	go func() {
		w, err := watch.New(ctx, c, root)
		done <- result{w, err}
	}()
	// Applied on the server, the answer dropped.
	serverWatches(t, ens, id, 1)
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	proxy.Restore()
	r := <-done
	if r.err != nil {
		t.Fatalf("New whose first answer was lost: %v", r.err)
	}
	w := r.w
	defer w.Close()
	serverWatches(t, ens, id, 1)
	set(t, conn, root, "x")
	for {
		// A Resync may come first: the watcher saw the reconnect.
		e := <-w.Events()
		if e.Type == watch.Resync {
			continue
		}
		if e != ev(watch.Changed, root) {
			t.Fatalf("event %v %s, want Changed %s", e.Type, e.Path, root)
		}
		break
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	serverWatches(t, ens, id, 0)
}

// TestWatcherSetAgainInANewSession: after the session expired, the
// watcher sets its watch in the client's next session, sends Resync, and
// reports every change after; the old session keeps nothing.
func TestWatcherSetAgainInANewSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := ctxFor(t, time.Minute)
	w, err := watch.New(ctx, c, root)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	old := c.Session().ID()
	states := c.Listen(ctx)
	if _, err := proxy.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitState(t, states, connection.Lost, 30*time.Second)
	testkit.WaitState(t, states, connection.Reconnected, 30*time.Second)
	expectEvents(t, w, ev(watch.Resync, root))
	id := c.Session().ID()
	if id == old {
		t.Fatalf("session %#x after the expiry, want a new one", id)
	}
	serverWatches(t, ens, old, 0)
	serverWatches(t, ens, id, 1)
	create(t, conn, root+"/x")
	set(t, conn, root, "y")
	expectEvents(t, w, ev(watch.ChildrenChanged, root), ev(watch.Changed, root))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	serverWatches(t, ens, id, 0)
}

// TestWatcherSetAgainOnAnotherServer: when the server the client is
// connected to stops, the client moves to another in the same session;
// the watcher sets its watch there, sends Resync and reports every change
// after, and the ensemble holds the one watch.
func TestWatcherSetAgainOnAnotherServer(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(3))
	conn := ens.Conn(t)
	root := "/moving"
	create(t, conn, root)
	c := open(t, ens.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 2*time.Minute)
	w, err := watch.New(ctx, c, root, watch.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	id := c.Session().ID()
	serverWatches(t, ens, id, 1)
	holder := -1
	for i, addr := range ens.Servers() {
		out, err := zktest.FourLetter(addr, "wchc", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, root) {
			holder = i
		}
	}
	if holder < 0 {
		t.Fatal("no server holds the watch")
	}
	states := c.Listen(ctx)
	if err := ens.Stop(holder); err != nil {
		t.Fatal(err)
	}
	testkit.WaitState(t, states, connection.Reconnected, time.Minute)
	expectEvents(t, w, ev(watch.Resync, root))
	if c.Session().ID() != id {
		t.Fatalf("session %#x on the other server, want the same %#x", c.Session().ID(), id)
	}
	zktest.Eventually(t, 10*time.Second, "the watch on the other servers", func() error {
		n := 0
		for i, addr := range ens.Servers() {
			if i == holder {
				continue
			}
			out, err := zktest.FourLetter(addr, "wchc", 5*time.Second)
			if err != nil {
				return err
			}
			n += strings.Count(out, "\t"+root+"\n")
		}
		if n != 1 {
			return fmt.Errorf("the servers left hold %d watches of %s, want 1", n, root)
		}
		return nil
	})
	create(t, conn, root+"/a")
	set(t, conn, root+"/a", "x")
	expectEvents(t, w, ev(watch.Created, root+"/a"), ev(watch.Changed, root+"/a"))
}
