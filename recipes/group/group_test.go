package group_test

import (
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

// TestJoinLeave: members of two clients join, one changes its data and
// leaves; a listener hears Joined, Updated and Left in that order, the
// views agree with the server, and leaving deletes the member's node.
func TestJoinLeave(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/workers"
	c1, c2 := open(t, ens.Servers()), open(t, ens.Servers())
	a := join(t, c1, dir, "a", group.WithData([]byte("10.0.0.1")))
	events, err := a.Listen(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	first := <-events
	if first.Type != group.Resync {
		t.Fatalf("first event %v, want RESYNC", first.Type)
	}
	b := join(t, c2, dir, "b", group.WithData([]byte("10.0.0.2")))
	sees(t, a, "a=10.0.0.1,b=10.0.0.2")
	sees(t, b, "a=10.0.0.1,b=10.0.0.2")
	// The Resync may or may not hold a; whatever it lacked comes as Joined.
	have := map[string]bool{}
	for _, m := range first.Members {
		have[m.ID] = true
	}
	for !have["a"] || !have["b"] {
		ev := next(t, events)
		if ev.Type != group.Joined {
			t.Fatalf("event %v %s, want JOINED", ev.Type, ev.Member.ID)
		}
		have[ev.Member.ID] = true
	}
	if err := b.SetData(ctxFor(t, 10*time.Second), []byte("10.0.0.3")); err != nil {
		t.Fatal(err)
	}
	ev := next(t, events)
	if ev.Type != group.Updated || ev.Member.ID != "b" || string(ev.Member.Data) != "10.0.0.3" || string(ev.Old.Data) != "10.0.0.2" {
		t.Fatalf("event %v %s %q (old %q), want UPDATED b 10.0.0.3 (old 10.0.0.2)", ev.Type, ev.Member.ID, ev.Member.Data, ev.Old.Data)
	}
	if ev.Member.Stat.EphemeralOwner != c2.Session().ID() {
		t.Fatalf("b's owner %#x, want c2's session %#x", ev.Member.Stat.EphemeralOwner, c2.Session().ID())
	}
	if err := b.Close(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	ev = next(t, events)
	if ev.Type != group.Left || ev.Member.ID != "b" {
		t.Fatalf("event %v %s, want LEFT b", ev.Type, ev.Member.ID)
	}
	obs := ens.Conn(t)
	if ok, _, err := obs.Exists(path.Join(dir, "b")); err != nil || ok {
		t.Fatalf("b's node after Close: exists %v, %v", ok, err)
	}
	if got := a.IDs(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("ids %v, want [a]", got)
	}
}

// TestWatch: a group followed without joining shows the members and
// takes no part.
func TestWatch(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/g"
	c := open(t, ens.Servers())
	w, err := group.Watch(c, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctxFor(t, 10*time.Second))
	join(t, c, dir, "m1", group.WithData([]byte("x")))
	sees(t, w, "m1=x")
	if err := w.SetData(ctxFor(t, time.Second), []byte("y")); !errors.Is(err, group.ErrNotMember) {
		t.Fatalf("SetData of a watcher: %v, want ErrNotMember", err)
	}
	if w.Node() != nil || w.ID() != "" {
		t.Fatal("a watcher has a node or an id")
	}
}

// TestMisuse: bad ids, data in a Kazoo layout, use after Close.
func TestMisuse(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	dir := ens.Root(t) + "/g"
	for _, tc := range []struct {
		id   string
		opts []group.Option
		want error
	}{
		{"", nil, connection.ErrInvalidOption},
		{"a/b", nil, connection.ErrInvalidPath},
		{"..", nil, connection.ErrInvalidPath},
		{"a", []group.Option{group.WithLayout(group.KazooParty), group.WithData([]byte("x"))}, group.ErrNoData},
		{"a", []group.Option{group.WithLayout(group.Layout(9))}, connection.ErrInvalidOption},
	} {
		if _, err := group.New(c, dir, tc.id, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("New(%q): %v, want %v", tc.id, err, tc.want)
		}
	}
	if _, err := group.New(c, "no-slash", "a"); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("New on a bad path: %v", err)
	}
	if _, err := group.Watch(c, dir, group.WithData(nil)); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("Watch with data: %v", err)
	}
	p := join(t, c, dir, "p", group.WithLayout(group.KazooShallowParty))
	if err := p.SetData(ctxFor(t, time.Second), []byte("x")); !errors.Is(err, group.ErrNoData) {
		t.Errorf("SetData in a shallow party: %v", err)
	}
	g := join(t, c, dir, "a")
	if _, err := group.New(c, dir, "a"); err == nil {
		t.Error("a second member a of the same client joined")
	}
	if err := g.Close(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := g.Listen(ctxFor(t, time.Second)); !errors.Is(err, group.ErrClosed) {
		t.Errorf("Listen after Close: %v", err)
	}
}

// TestExpiry: a member cut off past its session timeout leaves the group
// (the server expires its session and deletes its node: the others see
// Left), and joins again in its next session with a new node (Joined,
// owned by the new session), without being told to.
func TestExpiry(t *testing.T) {
	if raceDetector {
		t.Skip("go-zookeeper/zk#35: its reconnects race inside go-zookeeper under -race")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	dir := ens.Root(t) + "/g"
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	o := open(t, ens.Servers())
	m := join(t, c, dir, "m", group.WithData([]byte("d")))
	w, err := group.Watch(o, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctxFor(t, 10*time.Second))
	events, err := w.Listen(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	sees(t, w, "m=d")
	old := c.Session().ID()
	var joined zk.Stat
	for ev := range events { // drain up to the member's presence
		if ev.Type == group.Resync && len(ev.Members) == 1 {
			joined = ev.Members[0].Stat
			break
		}
		if ev.Type == group.Joined {
			joined = ev.Member.Stat
			break
		}
	}
	if joined.EphemeralOwner != old {
		t.Fatalf("m's owner %#x, want %#x", joined.EphemeralOwner, old)
	}
	proxy.Blackhole()
	cut := time.Now()
	ev := next(t, events)
	if ev.Type != group.Left || ev.Member.ID != "m" {
		t.Fatalf("event %v %s, want LEFT m at the expiry", ev.Type, ev.Member.ID)
	}
	left := time.Since(cut)
	proxy.Restore()
	restored := time.Now()
	ev = next(t, events)
	t.Logf("cut to Left at the observer: %v (2 s session); let through to Joined again: %v", left, time.Since(restored))
	if ev.Type != group.Joined || ev.Member.ID != "m" || string(ev.Member.Data) != "d" {
		t.Fatalf("event %v %s %q, want JOINED m d", ev.Type, ev.Member.ID, ev.Member.Data)
	}
	if ev.Member.Stat.EphemeralOwner == old || ev.Member.Stat.Czxid == joined.Czxid {
		t.Fatalf("m joined again with owner %#x czxid %d, the old session's %#x %d", ev.Member.Stat.EphemeralOwner, ev.Member.Stat.Czxid, old, joined.Czxid)
	}
	if _, err := m.Node().Trust(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := c.Session().ID(); ev.Member.Stat.EphemeralOwner != got {
		t.Fatalf("m's new owner %#x, want the client's new session %#x", ev.Member.Stat.EphemeralOwner, got)
	}
}
