package naive_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// TestHoldEndsWhenItsNodeIsReplacedDuringCut: under the session policy a
// hold lasts across a short cut. While A is cut off, someone deletes A's
// lock node (an operator) and B, on another client, takes the lock: B's
// node is at A's path. When A reconnects, go-zookeeper sets A's watch on
// the node again, and the server, finding a node at the path modified
// since A last heard, fires NodeDataChanged — not NodeDeleted. Taken for
// a change of its own node's data (a revocation), it would let A's hold go
// on, its Done never closing and every guarded transaction of A committing
// on B's node while B holds — beyond what docs/safety.md allows the
// fixed-path window ("before it heard of the deletion"). So the hold reads
// its node again after a change of its data and ends when the czxid is
// not its own (lockcore Hold.rewatch); a guard refuses until that read is
// back.
func TestHoldEndsWhenItsNodeIsReplacedDuringCut(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	ac := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	bc := open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, time.Minute)
	if _, err := obs.Create(root+"/state", []byte("init"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	set := func(v string) *zk.SetDataRequest {
		return &zk.SetDataRequest{Path: root + "/state", Data: []byte(v), Version: -1}
	}
	a := newLock(t, ac, root+"/lock")
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	aToken := a.Token()
	states := ac.Listen(ctx)

	p.Cut()
	testkit.WaitState(t, states, connection.Suspended, 20*time.Second)
	if err := obs.Delete(root+"/lock", -1); err != nil { // an operator
		t.Fatal(err)
	}
	b := newLock(t, bc, root+"/lock")
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bc.Multi(ctx, b.Guard(), set("b")); err != nil {
		t.Fatalf("B's guarded write: %v", err)
	}
	p.Restore()
	testkit.WaitState(t, states, connection.Reconnected, 20*time.Second)
	// A's client has its watches back: the server has told it of the
	// change at its node's path.
	if err := ac.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}
	_, err := ac.Multi(ctx, a.Guard(), set("a, after the reconnection"))
	t.Logf("A's guarded transaction after Reconnected: %v", err)
	data, st, gerr := obs.Get(root + "/state")
	if gerr != nil {
		t.Fatal(gerr)
	}
	_, lst, lerr := obs.Get(root + "/lock")
	if lerr != nil || lst.EphemeralOwner != b.Guard().Session().ID() || lst.Czxid == aToken {
		t.Fatalf("lock node %+v, %v: want B's", lst, lerr)
	}
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Errorf("A's Done still open 5s after Reconnected, though its node (czxid %d) is gone and B's (czxid %d, session %#x) is at its path",
			aToken, lst.Czxid, lst.EphemeralOwner)
	}
	if err == nil || string(data) != "b" {
		t.Errorf("A's transaction, guarded by a hold whose node was gone, committed while B held the lock: "+
			"Multi error %v, state %q (version %d), want ErrGuardFailed and B's write only", err, data, st.Version)
	} else if !errors.Is(err, connection.ErrGuardFailed) {
		t.Errorf("A's transaction: %v, want ErrGuardFailed", err)
	}
	// A lets go of what it believes it holds: B's node must survive.
	uerr := a.Unlock(ctx)
	if _, st, err := obs.Get(root + "/lock"); err != nil || st.Czxid != lst.Czxid {
		t.Errorf("after A's Unlock (%v), B's lock node: %v, want it still there (czxid %d)", uerr, err, lst.Czxid)
	}
	_ = b.Unlock(ctx)
}
