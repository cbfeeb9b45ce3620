package partition_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// TestShare: three members of one client each and a set of seven items.
// Once the party is stable, each holds its Kazoo split, the server shows
// every item's lock held by that member's node, and the shares' tokens
// are their nodes' czxids. One member leaves: the others' shares end
// with ErrRebalance, and the set is split between the two.
func TestShare(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/work"
	obs := ens.Conn(t)
	items := itemsN(7)
	var ms []*member
	for _, id := range []string{"m1", "m2", "m3"} {
		ms = append(ms, start(t, open(t, ens.Servers()), dir, id, items))
	}
	settled(t, obs, dir, items, ms, 30*time.Second)
	for _, m := range ms {
		for _, it := range m.current().Items() {
			_, st, err := obs.Get(it.Node)
			if err != nil {
				t.Fatal(err)
			}
			if it.Token != st.Czxid || st.EphemeralOwner != m.c.Session().ID() {
				t.Fatalf("%s %s: token %d owner %#x; the node's czxid %d, owner %#x", m.id, it.Name, it.Token, m.c.Session().ID(), st.Czxid, st.EphemeralOwner)
			}
		}
	}
	s1 := ms[0].current()
	ms[2].close(t)
	select {
	case <-s1.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("m1's share did not end when m3 left")
	}
	if !errors.Is(s1.Err(), partition.ErrRebalance) {
		t.Fatalf("m1's share ended with %v, want ErrRebalance", s1.Err())
	}
	settled(t, obs, dir, items, ms[:2], 30*time.Second)
	if st, _ := ms[2].p.State(); st != partition.Failure || !errors.Is(ms[2].p.Err(), partition.ErrClosed) {
		t.Fatalf("closed partitioner: state %v, %v", st, ms[2].p.Err())
	}
}

// TestMisuse: bad items, identifiers and options; Acquire after Close.
func TestMisuse(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	dir := ens.Root(t) + "/p"
	for _, tc := range []struct {
		items []string
		opts  []partition.Option
		want  error
	}{
		{[]string{"a/b"}, nil, connection.ErrInvalidPath},
		{[]string{""}, nil, connection.ErrInvalidPath},
		{nil, []partition.Option{partition.WithIdentifier("x/y")}, connection.ErrInvalidPath},
		{nil, []partition.Option{partition.WithTimeBoundary(-1)}, connection.ErrInvalidOption},
		{nil, []partition.Option{partition.WithFunc(nil)}, connection.ErrInvalidOption},
	} {
		if _, err := partition.New(c, dir, tc.items, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("New(%q): %v, want %v", tc.items, err, tc.want)
		}
	}
	if _, err := partition.New(c, "bad", nil); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("bad path: %v", err)
	}
	p, err := partition.New(c, dir, []string{"a"}, partition.WithTimeBoundary(0))
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Acquire(ctxFor(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Names(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("a lone member holds %v", got)
	}
	it, _ := s.Item("a")
	if err := p.Close(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !closed(it.Done()) || !closed(s.Done()) {
		t.Fatal("Close left the item or the share open")
	}
	if _, err := p.Acquire(ctxFor(t, time.Second)); !errors.Is(err, partition.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if err := p.Close(ctxFor(t, time.Second)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if kids, _, _ := ens.Conn(t).Children(dir + "/locks/a"); len(kids) != 0 {
		t.Fatalf("lock nodes left after Close: %v", kids)
	}
}

func TestKazooSplit(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	for _, tc := range []struct {
		id      string
		members []string
		want    []string
	}{
		{"m1", []string{"m1"}, items},
		{"m1", []string{"m1", "m2"}, []string{"a", "c", "e"}},
		{"m2", []string{"m1", "m2"}, []string{"b", "d"}},
		{"m3", []string{"m1", "m2", "m3", "m4", "m5", "m6"}, []string{"c"}},
		{"m6", []string{"m1", "m2", "m3", "m4", "m5", "m6"}, nil},
		{"x", []string{"m1"}, nil},
		{"m1", []string{"m1", "m1", "m2"}, []string{"a", "d"}}, // Kazoo's index of the first
	} {
		got := partition.KazooSplit(tc.id, tc.members, items)
		if len(got) != len(tc.want) {
			t.Errorf("%s of %v: %v, want %v", tc.id, tc.members, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s of %v: %v, want %v", tc.id, tc.members, got, tc.want)
			}
		}
	}
}

// TestClientClosed: the member's client is closed under it: its items'
// holds and its share end, and once the share is released the
// Partitioner fails with the client's error.
func TestClientClosed(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	p, err := partition.New(c, ens.Root(t)+"/p", []string{"a", "b"}, partition.WithTimeBoundary(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctxFor(t, 10*time.Second))
	s, err := p.Acquire(ctxFor(t, 20*time.Second))
	if err != nil {
		// Rare, under a loaded -race run: show where the worker was.
		st, _ := p.State()
		t.Logf("state %v, session %v", st, c.Session())
		testkit.LogGoroutines(t, "Acquire gave up")
		t.Fatal(err)
	}
	c.Close()
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the share outlived its client")
	}
	for _, it := range s.Items() {
		if !closed(it.Done()) {
			t.Fatalf("%s still trusted after the client closed", it.Name)
		}
		// Why it ended: its session, with the client's Close.
		if err := it.Err(); !errors.Is(err, partition.ErrItemLost) || !errors.Is(err, connection.ErrClosed) || errors.Is(err, connection.ErrSuspended) || err != context.Cause(it.Context()) {
			t.Fatalf("%s: Err %v, Context cause %v; want one error matching ErrItemLost and connection.ErrClosed", it.Name, err, context.Cause(it.Context()))
		}
	}
	t.Logf("the share ended with: %v", s.Err())
	_ = s.Release(ctxFor(t, 5*time.Second))
	if _, err := p.Acquire(ctxFor(t, 20*time.Second)); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Acquire after the client closed: %v, want connection.ErrClosed", err)
	}
	if st, _ := p.State(); st != partition.Failure {
		t.Fatalf("state %v, want FAILURE", st)
	}
}
