package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

// TestCuratorLeaderLatchInterop: a Go candidate and Curator's LeaderLatch
// on one path elect exactly one leader between them, in line order, and
// each reports the other's id as the leader.
func TestCuratorLeaderLatchInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, 2*time.Minute)
	goCand := newElection(t, open(t, ens.Servers()), path, "go-1")
	term, err := goCand.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	latch := peertest.CuratorLatch(t, ens.ConnectString(), path, "java-1")
	latch.Send("start")
	latch.Expect("STARTED", 30*time.Second)
	latch.Send("await 1000")
	latch.Expect("TIMEOUT", 10*time.Second)
	latch.Send("leader")
	if id := latch.Expect("LEADER_ID", 10*time.Second); id != "go-1" {
		t.Fatalf("Curator says the leader is %q, want go-1", id)
	}
	waitParticipants(t, ctx, goCand, 2)
	ps, err := goCand.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ps[1].ID != "java-1" || ps[1].Leader {
		t.Fatalf("participants %+v: Curator's latch should wait second", ps)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	latch.Send("await 10000")
	latch.Expect("LEADER", 15*time.Second)
	if id, err := goCand.Leader(ctx); err != nil || id != "java-1" {
		t.Fatalf("Leader = %q, %v, want java-1", id, err)
	}
	// The Go candidate lines up behind Curator's and leads once it closes.
	won := make(chan error, 1)
	go func() {
		tm, err := goCand.Campaign(ctx)
		if err == nil {
			err = tm.Resign(ctx)
		}
		won <- err
	}()
	waitParticipants(t, ctx, goCand, 2)
	select {
	case err := <-won:
		t.Fatalf("the Go candidate led while Curator's did (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	latch.Send("close")
	latch.Expect("CLOSED", 10*time.Second)
	if err := <-won; err != nil {
		t.Fatal(err)
	}
}

// TestCuratorLeaderSelectorInterop: with WithSelectorLayout, a Go candidate
// and Curator's LeaderSelector take turns on one path.
func TestCuratorLeaderSelectorInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/selector"
	ctx := ctxFor(t, 2*time.Minute)
	goCand := newElection(t, open(t, ens.Servers()), path, "go-1", election.WithSelectorLayout())
	term, err := goCand.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sel := peertest.CuratorSelector(t, ens.ConnectString(), path, "java-1")
	sel.Send("start")
	sel.Expect("STARTED", 30*time.Second)
	sel.Quiet(time.Second)
	sel.Send("leader")
	if id := sel.Expect("LEADER_ID", 10*time.Second); id != "go-1" {
		t.Fatalf("Curator says the leader is %q, want go-1", id)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	sel.Expect("LEADING", 15*time.Second)
	if id, err := goCand.Leader(ctx); err != nil || id != "java-1" {
		t.Fatalf("Leader = %q, %v, want java-1", id, err)
	}
	won := make(chan error, 1)
	go func() {
		err := goCand.Run(ctx, func(context.Context, *election.Term) error { return nil })
		won <- err
	}()
	waitParticipants(t, ctx, goCand, 2)
	select {
	case err := <-won:
		t.Fatalf("the Go candidate led while Curator's did (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	sel.Send("resign")
	sel.Expect("RESIGNED", 10*time.Second)
	if err := <-won; err != nil {
		t.Fatal(err)
	}
}

// TestCuratorLatchWithDefaultID: Curator's LeaderLatch with its default
// id, "", leads; Go's Leader and Observe report a leader whose id is
// empty, not "no leader", and "no leader" once it closes.
func TestCuratorLatchWithDefaultID(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, 2*time.Minute)
	obs := newElection(t, open(t, ens.Servers()), path, "observer")
	changes := obs.Observe(ctx)
	next := func() election.Participant {
		t.Helper()
		select {
		case l := <-changes:
			return l
		case <-time.After(15 * time.Second):
			t.Fatal("Observe delivered nothing")
			return election.Participant{}
		}
	}
	if l := next(); l.Leader {
		t.Fatalf("first observation %+v, want no leader", l)
	}
	latch := peertest.CuratorLatch(t, ens.ConnectString(), path, "")
	latch.Send("start")
	latch.Expect("STARTED", 30*time.Second)
	latch.Send("await 10000")
	latch.Expect("LEADER", 15*time.Second)
	ps, err := obs.Participants(ctx)
	if err != nil || len(ps) != 1 || ps[0].ID != "" || !ps[0].Leader {
		t.Fatalf("participants %+v, %v: want Curator's latch leading with id \"\"", ps, err)
	}
	if id, err := obs.Leader(ctx); err != nil || id != "" {
		t.Fatalf("Leader = %q, %v; want \"\", nil: a leader with an empty id", id, err)
	}
	if l := next(); !l.Leader || l.ID != "" || l.Node != ps[0].Node || l.Token != ps[0].Token {
		t.Fatalf("observed %+v, want Curator's latch %+v", l, ps[0])
	}
	latch.Send("close")
	latch.Expect("CLOSED", 10*time.Second)
	if l := next(); l.Leader {
		t.Fatalf("observed %+v after the latch closed, want no leader", l)
	}
	if _, err := obs.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader after the latch closed = %v, want ErrNoLeader", err)
	}
}
