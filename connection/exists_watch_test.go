package connection_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// TestExistsWatchIsShared: callers that wait for a missing node share one
// watch, on the client and on the server; it fires when the node is
// created. On a node that exists, the watch fires for a data change and
// for the deletion, as a data watch does.
func TestExistsWatchIsShared(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := root + "/later"
	c := open(t, ens.Servers())
	other := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	var first *connection.Watch
	for i := range 5 {
		ok, stat, w, err := c.ExistsWatch(ctx, p)
		if err != nil || ok || stat != nil {
			t.Fatalf("ExistsWatch = %v, %v, %v: want a missing node", ok, stat, err)
		}
		if i == 0 {
			first = w
		} else if w != first {
			t.Fatalf("call %d got a new watch while one was pending", i)
		}
	}
	if n := c.Stats().PendingWatches; n != 1 {
		t.Fatalf("PendingWatches = %d, want 1", n)
	}
	if n := testkit.ServerWatches(t, ens, c.Session().ID()); n != 1 {
		t.Fatalf("%d watches of the session on the server, want 1", n)
	}
	if _, err := other.Create(p, []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	wait(t, first, zk.EventNodeCreated)
	if n := c.Stats().PendingWatches; n != 0 {
		t.Fatalf("PendingWatches = %d after the creation, want 0", n)
	}

	ok, stat, w, err := c.ExistsWatch(ctx, p)
	if err != nil || !ok || stat == nil || stat.Version != 0 || w == first {
		t.Fatalf("ExistsWatch on the node = %v, %+v, %v, new watch %v", ok, stat, err, w != first)
	}
	if _, err := other.Set(p, []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	wait(t, w, zk.EventNodeDataChanged)

	_, _, w, err = c.ExistsWatch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	wait(t, w, zk.EventNodeDeleted)
	if n := c.Stats().PendingWatches; n != 0 {
		t.Fatalf("PendingWatches = %d after every change, want 0", n)
	}
}

// TestExistsWatchSetJustBeforeCreationFires: another client creates the
// node while the read that sets the watch is on its way, over and over; a
// watch that ExistsWatch returned for a missing node must fire.
func TestExistsWatchSetJustBeforeCreationFires(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers()[:1])
	other := ens.Conn(t)
	ctx := ctxFor(t, 2*time.Minute)
	set := 0
	for i := range 200 {
		p := fmt.Sprintf("%s/n%d", root, i)
		created := make(chan error, 1)
		go func() {
			time.Sleep(time.Duration(i%7) * 100 * time.Microsecond)
			_, err := other.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
			created <- err
		}()
		ok, _, w, err := c.ExistsWatch(ctx, p)
		if err := <-created; err != nil {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			continue // created before the read
		}
		set++
		select {
		case <-w.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the watch never fired for the creation", i)
		}
	}
	t.Logf("%d of 200 watches set before the creation", set)
}

// TestCloseEndsExistsWatch: a watch for a node that never comes ends with
// the client.
func TestCloseEndsExistsWatch(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c, err := connection.Open(ctxFor(t, 10*time.Second), ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	ok, _, w, err := c.ExistsWatch(ctxFor(t, 10*time.Second), root+"/never")
	if err != nil || ok {
		t.Fatalf("ExistsWatch = %v, %v", ok, err)
	}
	c.Close()
	if !closed(w.Done()) {
		t.Fatal("a pending watch is still open after Close")
	}
	if !errors.Is(w.Err(), connection.ErrSessionLost) {
		t.Fatalf("Err = %v, want ErrSessionLost", w.Err())
	}
}

// wait waits for w to fire with an event of type want.
func wait(t *testing.T, w *connection.Watch, want zk.EventType) {
	t.Helper()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the watch did not fire for %v", want)
	}
	if ev := w.Event(); ev.Type != want || w.Err() != nil {
		t.Fatalf("event %v, err %v; want %v", ev, w.Err(), want)
	}
}
