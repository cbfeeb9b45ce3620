package mutex_test

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCuratorInterop: a Go Mutex and Curator's InterProcessMutex on one
// path exclude each other in both directions.
func TestCuratorInterop(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	ctx := ctxFor(t, 2*time.Minute)
	curator := peertest.Curator(t, ens.ConnectString(), lock, "mutex")
	g := newMutex(t, open(t, ens.Servers()), lock)

	// Go holds: Curator waits until Go releases.
	if err := g.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	curator.Send("acquire 300")
	curator.Expect("TIMEOUT", 10*time.Second)
	curator.Send("acquire")
	curator.Quiet(500 * time.Millisecond)
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	node := curator.Expect("ACQUIRED", 10*time.Second)
	if !strings.Contains(node, "-lock-") {
		t.Fatalf("Curator's node %q", node)
	}

	// Curator holds: Go waits until Curator releases.
	if err := g.TryLock(ctx); !errors.Is(err, mutex.ErrLocked) {
		t.Fatalf("Go TryLock while Curator holds = %v, want ErrLocked", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- g.Lock(ctx) }()
	select {
	case err := <-locked:
		t.Fatalf("Go acquired while Curator holds: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	curator.Send("release")
	curator.Expect("RELEASED", 10*time.Second)
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCuratorFIFOAcrossLanguages: Go and Curator waiters are served in
// the order they queued, whichever language each is.
func TestCuratorFIFOAcrossLanguages(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	ctx := ctxFor(t, 2*time.Minute)
	c1 := peertest.Curator(t, ens.ConnectString(), lock, "mutex")
	c2 := peertest.Curator(t, ens.ConnectString(), lock, "mutex")
	holder := newMutex(t, open(t, ens.Servers()), lock)
	g1 := newMutex(t, open(t, ens.Servers()), lock)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	queued := func(n int) {
		zktest.Eventually(t, 20*time.Second, "queued", func() error {
			ps, err := holder.Participants(ctx)
			if err == nil && len(ps) != n {
				err = fmt.Errorf("%d participants, want %d", len(ps), n)
			}
			return err
		})
	}
	// Queue: Curator 1, Go 1, Curator 2.
	c1.Send("acquire")
	queued(2)
	g1Locked := make(chan error, 1)
	go func() { g1Locked <- g1.Lock(ctx) }()
	queued(3)
	c2.Send("acquire")
	queued(4)

	// Curator's own view lists the Go contenders, in the same order.
	c1.Send("participants") // answered after c1's acquire returns
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	c1.Expect("ACQUIRED", 10*time.Second)
	if got := c1.Expect("PARTICIPANTS", 10*time.Second); len(strings.Split(got, ",")) != 3 {
		t.Fatalf("Curator's participants %q, want 3 (itself, Go, Curator)", got)
	}
	select {
	case err := <-g1Locked:
		t.Fatalf("Go waiter acquired before the Curator ahead of it released: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	c1.Send("release")
	c1.Expect("RELEASED", 10*time.Second)
	if err := <-g1Locked; err != nil {
		t.Fatal(err)
	}
	c2.Quiet(300 * time.Millisecond)
	if err := g1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	c2.Expect("ACQUIRED", 10*time.Second)
	c2.Send("release")
	c2.Expect("RELEASED", 10*time.Second)
}

// TestCuratorSeesGoParticipants: Curator's getParticipantNodes lists Go
// contenders, holder first.
func TestCuratorSeesGoParticipants(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	ctx := ctxFor(t, 2*time.Minute)
	holder := newMutex(t, open(t, ens.Servers()), lock)
	waiter := newMutex(t, open(t, ens.Servers()), lock)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		if err := waiter.Lock(ctx); err != nil {
			waited <- err
			return
		}
		waited <- waiter.Unlock(ctx)
	}()
	var goNodes []string
	zktest.Eventually(t, 20*time.Second, "waiter queued", func() error {
		ps, err := holder.Participants(ctx)
		if err != nil {
			return err
		}
		if len(ps) != 2 {
			return fmt.Errorf("%d participants", len(ps))
		}
		goNodes = []string{ps[0].Path, ps[1].Path}
		return nil
	})
	curator := peertest.Curator(t, ens.ConnectString(), lock, "mutex")
	curator.Send("participants")
	got := strings.Split(curator.Expect("PARTICIPANTS", 10*time.Second), ",")
	if len(got) != 2 || got[0] != goNodes[0] || got[1] != goNodes[1] {
		t.Fatalf("Curator lists %v, want the Go contenders %v", got, goNodes)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}

// TestRevokeReachesCurator: a Go revoke reaches a Curator holder's
// revocation listener.
func TestRevokeReachesCurator(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	ctx := ctxFor(t, 2*time.Minute)
	curator := peertest.Curator(t, ens.ConnectString(), lock, "mutex")
	curator.Send("revocable")
	curator.Expect("REVOCABLE", 10*time.Second)
	curator.Send("acquire")
	node := curator.Expect("ACQUIRED", 10*time.Second)
	c := open(t, ens.Servers())
	ps, err := mutex.Participants(ctx, c, lock)
	if err != nil || len(ps) != 1 || ps[0].Path != node {
		t.Fatalf("participants %+v (%v), want Curator's %s", ps, err, node)
	}
	if err := mutex.Revoke(ctx, c, ps[0].Path); err != nil {
		t.Fatal(err)
	}
	curator.Expect("REVOKE_REQUESTED", 10*time.Second)
	curator.Send("release")
	curator.Expect("RELEASED", 10*time.Second)
}

// TestKazooInterop: a Kazoo Lock (with extra_lock_patterns=["-lock-"])
// and a Go Mutex exclude each other in both directions.
func TestKazooInterop(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	ctx := ctxFor(t, 2*time.Minute)
	kazoo := peertest.Kazoo(t, ens.ConnectString(), lock)
	g := newMutex(t, open(t, ens.Servers()), lock)

	if err := g.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	kazoo.Send("acquire 0.3")
	kazoo.Expect("TIMEOUT", 10*time.Second)
	kazoo.Send("acquire")
	kazoo.Quiet(500 * time.Millisecond)
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	kazoo.Expect("ACQUIRED", 10*time.Second)

	ps, err := g.Participants(ctx)
	if err != nil || len(ps) != 1 || ps[0].Kind != "kazoo-lock" || string(ps[0].Data) != "kazoo" {
		t.Fatalf("participants while Kazoo holds: %+v, %v", ps, err)
	}
	if err := g.TryLock(ctx); !errors.Is(err, mutex.ErrLocked) {
		t.Fatalf("Go TryLock while Kazoo holds = %v, want ErrLocked", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- g.Lock(ctx) }()
	select {
	case err := <-locked:
		t.Fatalf("Go acquired while Kazoo holds: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	kazoo.Send("release")
	kazoo.Expect("RELEASED", 10*time.Second)
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path.Base(g.Node()), "_c_") {
		t.Fatalf("Go node %q", g.Node())
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCuratorAndKazooOnOnePathAreNotSafe shows what happens when Curator
// and Kazoo share a lock path: Curator 5.4 sorts a child without "lock-"
// by its whole name, so Kazoo's "<hex>__lock__<seq>" node does not sort
// ahead of Curator's "…-lock-<seq>", and Curator takes the lock while
// Kazoo holds it. (Kazoo, with extra_lock_patterns=["-lock-"], does see
// Curator's node.) Go pairs safely with either; docs/locks.md says which
// pairs share a lock.
func TestCuratorAndKazooOnOnePathAreNotSafe(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	kazoo := peertest.Kazoo(t, ens.ConnectString(), lock)
	curator := peertest.Curator(t, ens.ConnectString(), lock, "mutex")

	kazoo.Send("acquire")
	kazoo.Expect("ACQUIRED", 10*time.Second)
	curator.Send("acquire 3000")
	got := curator.Expect("", 10*time.Second)
	if !strings.HasPrefix(got, "ACQUIRED") {
		t.Fatalf("Curator answered %q while Kazoo holds; Curator 5.4 was expected to take the lock beside Kazoo", got)
	}
	t.Logf("Kazoo holds and Curator acquired too: %s", got)
	curator.Send("release")
	curator.Expect("RELEASED", 10*time.Second)
	kazoo.Send("release")
	kazoo.Expect("RELEASED", 10*time.Second)
}
