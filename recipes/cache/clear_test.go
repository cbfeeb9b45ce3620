package cache_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestClearOnSessionLoss: the client of two caches of one tree, one with
// WithClearOnSessionLoss, is cut off (a blackhole) for longer than its
// session timeout, so that the server expires the session, while another
// client changes the tree. The cache with the option: Untrusted, then a
// Deleted for every node, children first, and an empty view while cut
// off; in the new session a Created for every node of the tree as it is
// then (parents first), then Trusted; the ephemeral node of the lost
// session is gone from it. The cache without: the last view kept while
// cut off, then only the events of the paths that changed. Both equal a
// fresh read of the tree at the end.
func TestClearOnSessionLoss(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	makeTree(t, conn, root, 4, 3)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(faultSession))
	ctx := ctxFor(t, 2*time.Minute)
	mine := root + "/a0/mine"
	if _, err := client.Create(ctx, mine, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	cleared := newCache(t, client, root, cache.WithClearOnSessionLoss())
	kept := newCache(t, client, root)
	recC, recK := record(t, cleared), record(t, kept)
	for _, c := range []*cache.Cache{cleared, kept} {
		if _, err := c.Trust(ctx); err != nil {
			t.Fatal(err)
		}
	}
	before := readTree(t, conn, root, -1)
	for _, c := range []*cache.Cache{cleared, kept} {
		if d := diff(nodesOf(c.Snapshot()), before); d != "" {
			t.Fatalf("first view differs from the server:\n%s", d)
		}
	}
	// Both listeners have every event of the first view.
	zktest.Eventually(t, 10*time.Second, "the listeners have the first view", func() error {
		for _, r := range []*recorder{recC, recK} {
			if d := diff(replay(r.all()), before); d != "" {
				return errors.New(d)
			}
		}
		return nil
	})
	isTrusted := func(ev cache.Event) bool { return ev.Type == cache.Trusted }
	markC := recC.waitFor(t, "Trusted", isTrusted) + 1
	markK := recK.waitFor(t, "Trusted", isTrusted) + 1
	sid := client.Session().ID()

	proxy.Blackhole()
	// The client counts its session lost once cut off for longer than its
	// timeout: the view with the option empties then, still cut off.
	recC.waitFor(t, "Deleted root", func(ev cache.Event) bool { return ev.Type == cache.Deleted && ev.Path == root })
	if n := cleared.Snapshot().Len(); n != 0 {
		t.Fatalf("%d nodes in the cleared view", n)
	}
	if n := kept.Snapshot().Len(); n != len(before) {
		t.Fatalf("%d nodes in the kept view while cut off, %d before", n, len(before))
	}
	if !closed(cleared.Untrusted()) || !closed(kept.Untrusted()) {
		t.Fatal("a view is trusted while cut off")
	}
	// Meanwhile the tree changes.
	if _, err := conn.Set(root+"/a1", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(root+"/a2/b0", -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, conn, root+"/a3/new", []byte("new"))
	// The client counts its session lost by its own clock; the server
	// expires it a little later (its expiry rounded up to a tick). Back
	// before that, the new session could read the old one's ephemeral node
	// and see it go: wait for the server's view.
	zktest.Eventually(t, 30*time.Second, "the server expired the old session", func() error {
		if ok, _, err := conn.Exists(mine); err != nil || ok {
			return fmt.Errorf("%s still there (%v)", mine, err)
		}
		return nil
	})
	proxy.Restore()
	for _, c := range []*cache.Cache{cleared, kept} {
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Trust(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s := client.Session().ID(); s == sid {
		t.Fatalf("the session %#x was not lost", sid)
	}
	after := readTree(t, conn, root, -1)
	if _, ok := after[mine]; ok {
		t.Fatal("the ephemeral node of the lost session is still on the server")
	}
	for _, c := range []*cache.Cache{cleared, kept} {
		if d := diff(nodesOf(c.Snapshot()), after); d != "" {
			t.Fatalf("view after the new session differs from the server:\n%s", d)
		}
	}
	for _, r := range []*recorder{recC, recK} {
		zktest.Eventually(t, 10*time.Second, "the listeners have every event", func() error {
			if d := diff(replay(r.all()), after); d != "" {
				return errors.New(d)
			}
			return nil
		})
	}

	// With the option: Untrusted, Deleted for every node, Created for
	// every node, Trusted.
	evs := recC.all()[markC:]
	var want []string
	want = append(want, "UNTRUSTED")
	for range before {
		want = append(want, "DELETED")
	}
	for range after {
		want = append(want, "CREATED")
	}
	want = append(want, "TRUSTED")
	var got []string
	deleted, created := map[string]int{}, map[string]int{}
	for _, ev := range evs {
		got = append(got, ev.Type.String())
		switch ev.Type {
		case cache.Deleted:
			deleted[ev.Path]++
		case cache.Created:
			created[ev.Path]++
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events with the option: %s\nwant: %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	for p := range before {
		if deleted[p] != 1 {
			t.Errorf("%s deleted %d times", p, deleted[p])
		}
	}
	for p := range after {
		if created[p] != 1 {
			t.Errorf("%s created %d times", p, created[p])
		}
	}
	if !errors.Is(evs[0].Err, cache.ErrSuspended) && !errors.Is(evs[0].Err, connection.ErrSessionLost) {
		t.Errorf("Untrusted with %v", evs[0].Err)
	}
	// The deletions (children first), then the creations from an empty
	// view (parents first): the same nodes, so checked apart (checkOrder
	// takes a Created of a czxid seen before for a node going back in
	// time).
	all, split := recC.all(), markC+1+len(before)
	bad := checkOrder(all[:split], root)
	bad = append(bad, checkOrder(append([]cache.Event{{Type: cache.Resync}}, all[split:]...), root)...)
	if len(bad) > 0 {
		t.Fatalf("order with the option:\n%s", strings.Join(bad, "\n"))
	}

	// Without: the difference.
	var diffEvents []string
	for _, ev := range recK.all()[markK:] {
		if ev.Path != "" {
			diffEvents = append(diffEvents, fmt.Sprintf("%s %s", ev.Type, strings.TrimPrefix(ev.Path, root)))
		}
	}
	wantDiff := map[string]bool{"CHANGED /a1": true, "DELETED /a2/b0": true, "CREATED /a3/new": true, "DELETED /a0/mine": true}
	if len(diffEvents) != len(wantDiff) {
		t.Fatalf("events without the option: %v, want %v", diffEvents, wantDiff)
	}
	for _, e := range diffEvents {
		if !wantDiff[e] {
			t.Fatalf("events without the option: %v, want %v", diffEvents, wantDiff)
		}
	}
	t.Logf("with the option: %d events; without: %v", len(evs), diffEvents)
}

// TestClearOnSessionLossSuspended: a short cut (the same session back)
// does not clear a view WithClearOnSessionLoss: Untrusted, then Trusted,
// and no node event.
func TestClearOnSessionLossSuspended(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	makeTree(t, conn, root, 3, 2)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(faultSession))
	c := newCache(t, client, root, cache.WithClearOnSessionLoss())
	rec := record(t, c)
	ctx := ctxFor(t, time.Minute)
	done, err := c.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mark := rec.waitFor(t, "Trusted", func(ev cache.Event) bool { return ev.Type == cache.Trusted }) + 1
	sid := client.Session().ID()
	proxy.Cut()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("still trusted while cut off")
	}
	proxy.Restore()
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if s := client.Session().ID(); s != sid {
		t.Skipf("the session changed (%#x → %#x): the machine was too slow for a short cut", sid, s)
	}
	var got []string
	zktest.Eventually(t, 10*time.Second, "Trusted again", func() error {
		got = got[:0]
		for _, ev := range rec.all()[mark:] {
			got = append(got, ev.Type.String())
		}
		if len(got) == 0 || got[len(got)-1] != "TRUSTED" {
			return fmt.Errorf("events %v", got)
		}
		return nil
	})
	if strings.Join(got, " ") != "UNTRUSTED TRUSTED" {
		t.Fatalf("events of a short cut: %v", got)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatal(d)
	}
}
