package group_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

// groupTail reads events until 1 s after an Untrusted with
// connection.ErrClosed (or 10 s) and says what is wrong: none, more than
// one, or events after it.
func groupTail(events <-chan group.Event) string {
	evs := testkit.CollectUntilQuiet(events, func(ev group.Event) bool {
		return ev.Type == group.Untrusted && errors.Is(ev.Err, connection.ErrClosed)
	}, time.Second, 10*time.Second)
	last, n := -1, 0
	for i, ev := range evs {
		if ev.Type == group.Untrusted && errors.Is(ev.Err, connection.ErrClosed) {
			last, n = i, n+1
		}
	}
	switch {
	case n != 1:
		return fmt.Sprintf("%d Untrusted with connection.ErrClosed in %d events", n, len(evs))
	case last != len(evs)-1:
		kinds := map[group.EventType]int{}
		for _, ev := range evs[last+1:] {
			kinds[ev.Type]++
		}
		return fmt.Sprintf("%d events after the Untrusted with connection.ErrClosed: %v", len(evs)-1-last, kinds)
	}
	return ""
}

// TestGroupClientClosedBeforeTrust: a watcher's client is cut off before
// the first load is in, then closed: its listener hears one Untrusted
// (connection.ErrClosed), the last, and the cache's Trust fails.
func TestGroupClientClosedBeforeTrust(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	dir := ens.Root(t) + "/workers"
	join(t, open(t, ens.Servers()), dir, "a")
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	proxy.Blackhole()
	g, err := group.Watch(c, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctxFor(t, 10*time.Second))
	events, err := g.Listen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	trust := make(chan error, 1)
	go func() { _, err := g.Cache().Trust(context.Background()); trust <- err }()
	time.Sleep(100 * time.Millisecond)
	c.Close()
	proxy.Restore()
	if msg := groupTail(events); msg != "" {
		t.Error(msg)
	}
	select {
	case err := <-trust:
		if !errors.Is(err, connection.ErrClosed) {
			t.Errorf("Trust: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Trust waiting 10 s after the client closed")
	}
}

// TestGroupClientClosedDuringFirstLoad: many members, the client closed
// while the first load is under way: no Joined after the Untrusted that
// says the client closed.
func TestGroupClientClosedDuringFirstLoad(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/workers"
	conn := ens.Conn(t)
	if _, err := conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var reqs []any
	for i := range 3000 {
		reqs = append(reqs, &zk.CreateRequest{Path: fmt.Sprintf("%s/m%d", dir, i), Data: []byte("d"), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 200 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	fails := 0
	const rounds = 3
	for round := range rounds {
		c := open(t, ens.Servers())
		g, err := group.Watch(c, dir)
		if err != nil {
			t.Fatal(err)
		}
		events, err := g.Listen(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			<-events
		}
		c.Close()
		if msg := groupTail(events); msg != "" {
			fails++
			t.Logf("round %d: %s", round, msg)
		}
		g.Close(ctxFor(t, 10*time.Second))
	}
	if fails > 0 {
		t.Errorf("events after the last Untrusted in %d of %d rounds", fails, rounds)
	}
}
