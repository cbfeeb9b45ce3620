package naive_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestUnlockNeverDeletesTheNextHoldersNodeThatItsServerHasNotSeen: A
// holds the lock through a follower that is behind the leader (slow links
// between servers). An operator deletes A's node and B, on the leader,
// takes the lock: its node is at the same path. A, not told yet (its
// follower has applied neither), unlocks. Its release must delete its own
// node and no other: B's hold must last, and B's node stay. Release reads
// the node on A's follower without a sync (DeleteCreated's first
// attempt), finds A's old node at version 0 and deletes "version 0" —
// on the leader, B's node.
func TestUnlockNeverDeletesTheNextHoldersNodeThatItsServerHasNotSeen(t *testing.T) {
	zktest.SkipIfShort(t)
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithSyncLimit(20*time.Second), zktest.WithServerPartitions())
	ens.RequireFaults(t)
	leader := ens.MustLeader(t)
	follower := (leader + 1) % 3
	addrs := ens.Servers()
	lpath := ens.Root(t) + "/l"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newLock(t, open(t, addrs[follower:follower+1], connection.WithSessionTimeout(10*time.Second)), lpath)
	bc := open(t, addrs[leader:leader+1], connection.WithSessionTimeout(10*time.Second))
	b := newLock(t, bc, lpath)
	operator, err := zktest.Connect(addrs[leader:leader+1], 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer operator.Close()
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const lag = 400 * time.Millisecond
	if err := ens.DelayServerLinks(lag); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ens.DelayServerLinks(0) })
	if err := operator.Delete(lpath, -1); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- b.Lock(ctx) }()
	time.Sleep(lag / 8) // B's create reaches the leader first
	uerr := a.Unlock(ctx)
	if err := <-locked; err != nil {
		t.Fatalf("B's Lock = %v", err)
	}
	if err := ens.DelayServerLinks(0); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.Sync(lpath); err != nil {
		t.Fatal(err)
	}
	ok, st, err := operator.Exists(lpath)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || st.EphemeralOwner != bc.Session().ID() || st.Czxid != b.Token() || testkit.Closed(b.Done()) {
		t.Errorf("A's Unlock (%v) deleted B's node: B's node exists %v, B's hold lost %v (%v)", uerr, ok, testkit.Closed(b.Done()), b.Err())
	}
	_ = b.Unlock(ctx)
}
