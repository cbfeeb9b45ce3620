package naive_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// TestUnlockNeverDeletesTheNextHoldersNodeThatItsServerHasNotSeen: A
// holds the lock through a follower that is behind the leader (slow links
// between servers). An operator deletes A's node and B, on the leader,
// takes the lock: its node is at the same path. A, not told yet (its
// follower has applied neither), unlocks. Its release must delete its own
// node and no other: B's hold must last, and B's node stay — a read on A's
// follower alone would still show A's node, at the version B's has (0).
func TestUnlockNeverDeletesTheNextHoldersNodeThatItsServerHasNotSeen(t *testing.T) {
	t.Parallel()
	ens := testkit.NewLagging(t)
	lpath := ens.Root(t) + "/l"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newLock(t, open(t, ens.Follower, connection.WithSessionTimeout(10*time.Second)), lpath)
	bc := open(t, ens.Leader, connection.WithSessionTimeout(10*time.Second))
	b := newLock(t, bc, lpath)
	operator := ens.OnLeader(t)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const lag = 400 * time.Millisecond
	ens.Lag(t, lag)
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
	ens.Lag(t, 0)
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
