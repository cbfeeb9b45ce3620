package barrier_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
)

var errNotYet = errors.New("not yet")

// TestBarrierInterop: a barrier set by one of Go, Curator and Kazoo holds
// the others back, and removed by any lets all through.
func TestBarrierInterop(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	path := ens.Root(t) + "/gate"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	b := newBarrier(t, c, path)
	cur := peertest.CuratorBarrier(t, ens.ConnectString(), path)
	kz := peertest.KazooBarrier(t, ens.ConnectString(), path)

	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	cur.Do("TIMEOUT", "wait 300")
	kz.Do("TIMEOUT", "wait 0.3")
	cur.Send("wait")
	kz.Send("wait")
	done := waitFor(func() error { return b.Wait(ctx) })
	cur.Quiet(300 * time.Millisecond)
	kz.Quiet(0)
	still(t, done, "Wait")
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	cur.Expect("PASSED", 30*time.Second)
	kz.Expect("PASSED", 30*time.Second)
	if err := within(t, done, 30*time.Second, "Wait"); err != nil {
		t.Fatal(err)
	}

	for _, setter := range []*peertest.Peer{cur, kz} {
		setter.Do("RAISED", "set")
		if ok, err := b.IsSet(ctx); err != nil || !ok {
			t.Fatalf("IsSet after a peer's set: %v %v", ok, err)
		}
		done := waitFor(func() error { return b.Wait(ctx) })
		other := kz
		if setter == kz {
			other = cur
		}
		other.Send("wait")
		other.Quiet(300 * time.Millisecond)
		still(t, done, "Wait")
		setter.Do("REMOVED", "remove")
		other.Expect("PASSED", 30*time.Second)
		if err := within(t, done, 30*time.Second, "Wait"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDoubleInteropCurator: Go members and Curator's
// DistributedDoubleBarrier members meet in one barrier, round after
// round, whoever arrives last: nobody passes Enter before the last
// arrives, and the server shows ready made after every member's node.
//
// The Curator driver makes a new DistributedDoubleBarrier for each
// round. With one instance entered again round after round, a Curator
// member can pass enter with three members of four and no ready node:
// Curator 5.4's enter returns after one wait,
// whatever woke it (GH-1290), and an instance keeps its node's name from
// round to round, so an exists watch its leave left on another member's
// vanished node can fire when that member makes its node again.
func TestDoubleInteropCurator(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	dir := ens.Root(t) + "/double"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	zc := ens.Conn(t)
	const n = 4
	peers := []*peertest.Peer{
		peertest.CuratorDoubleBarrier(t, ens.ConnectString(), dir, n),
		peertest.CuratorDoubleBarrier(t, ens.ConnectString(), dir, n),
	}
	for round, last := range []string{"go", "curator", "go", "curator"} {
		gos := []member{newMember(t, c, dir, n), newMember(t, c, dir, n)}
		var entered []<-chan error
		if last == "go" {
			for _, p := range peers {
				p.Send("enter")
			}
			entered = enterAll(ctx, gos[0])
			checkedSince(t, gos[0].h, 0, "Enter")
			waitMemberCount(t, zc, dir, 3, 30*time.Second, "three members")
			stillAll(t, entered, "Enter")
			peers[0].Quiet(200 * time.Millisecond)
			peers[1].Quiet(0)
			entered = append(entered, enterAll(ctx, gos[1])...)
		} else {
			entered = enterAll(ctx, gos...)
			peers[0].Send("enter")
			for _, m := range gos {
				checkedSince(t, m.h, 0, "Enter")
			}
			waitMemberCount(t, zc, dir, 3, 30*time.Second, "three members")
			stillAll(t, entered, "Enter")
			peers[0].Quiet(200 * time.Millisecond)
			peers[1].Send("enter")
		}
		allNil(t, entered, "Enter")
		for _, p := range peers {
			p.Expect("ENTERED", 30*time.Second)
		}
		v := viewOf(t, zc, dir)
		if v.ready == nil || len(v.members) != n {
			t.Fatalf("round %d: %d members, ready %v", round, len(v.members), v.ready != nil)
		}
		for name, st := range v.members {
			if len(name) != 36 || st.Czxid >= v.ready.Czxid {
				t.Fatalf("round %d: member %s (czxid %d), ready czxid %d", round, name, st.Czxid, v.ready.Czxid)
			}
		}
		for _, p := range peers {
			p.Send("leave")
		}
		allNil(t, leaveAll(ctx, gos...), "Leave")
		for _, p := range peers {
			p.Expect("LEFT", 30*time.Second)
		}
		if v := viewOf(t, zc, dir); len(v.members) != 0 || v.ready != nil {
			t.Fatalf("round %d, all left: %d members, ready %v", round, len(v.members), v.ready != nil)
		}
	}
}

// TestDoubleInteropKazoo: Go members and Kazoo's DoubleBarrier members
// meet in one barrier where the layouts agree (members are the children,
// ready opens it). Kazoo's member deletes ready as soon as it begins to
// leave: a Go member that waits takes ready's creation, which the server
// reported, for the opening, and passes even though ready is gone when it
// looks.
func TestDoubleInteropKazoo(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	dir := ens.Root(t) + "/double"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	zc := ens.Conn(t)
	const n = 3
	kz := peertest.KazooDoubleBarrier(t, ens.ConnectString(), dir, n)
	for round, last := range []string{"kazoo", "go", "kazoo"} {
		gos := []member{newMember(t, c, dir, n), newMember(t, c, dir, n)}
		var entered []<-chan error
		if last == "kazoo" {
			entered = enterAll(ctx, gos...)
			for _, m := range gos {
				checkedSince(t, m.h, 0, "Enter")
			}
			stillAll(t, entered, "Enter")
			// Kazoo enters, makes ready, and at once leaves: ready goes.
			kz.Send("enter")
			kz.Send("leave")
			kz.Expect("ENTERED True", 30*time.Second)
		} else {
			kz.Send("enter")
			entered = enterAll(ctx, gos[0])
			checkedSince(t, gos[0].h, 0, "Enter")
			waitMemberCount(t, zc, dir, 2, 30*time.Second, "two members")
			kz.Quiet(200 * time.Millisecond)
			stillAll(t, entered, "Enter")
			entered = append(entered, enterAll(ctx, gos[1])...)
			kz.Expect("ENTERED True", 30*time.Second)
			kz.Send("leave")
		}
		allNil(t, entered, "Enter")
		allNil(t, leaveAll(ctx, gos...), "Leave")
		kz.Expect("LEFT", 30*time.Second)
		if v := viewOf(t, zc, dir); len(v.members) != 0 || v.ready != nil {
			t.Fatalf("round %d, all left: %d members, ready %v", round, len(v.members), v.ready != nil)
		}
	}
}
