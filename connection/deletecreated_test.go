package connection_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// TestDeleteCreatedNeverDeletesANodeMadeAgainByAnother: a node made by
// the client is deleted by an operator, and another session makes a node
// again at the same path. DeleteCreated with the czxid of the client's
// node must leave the other session's node alone: it deletes "the node
// created at czxid, and no other node".
func TestDeleteCreatedNeverDeletesANodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/n"
	obs := ens.Conn(t)
	other := ens.Conn(t)
	ctx := ctxFor(t, 20*time.Second)
	c := open(t, ens.Servers())
	if _, err := c.Create(ctx, p, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := obs.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	mine := st.Czxid
	if err := obs.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	derr := c.DeleteCreated(ctx, p, mine)
	ok, st, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || st.EphemeralOwner != other.SessionID() {
		t.Errorf("DeleteCreated(czxid %#x) = %v deleted the node another session made at %s (exists %v)", mine, derr, p, ok)
	}
}

// TestDeleteCreatedNeverDeletesANodeMadeAgainThatItsServerHasNotSeen: the
// client is connected to a follower that is behind the leader (links
// between servers slow, as across datacenters). An operator deletes the
// client's node and another session makes a node again at the same path,
// both on the leader; the follower has not applied them yet. DeleteCreated
// with the czxid of the client's node must leave the other session's node
// alone: a read on the follower alone would still show the client's node,
// at the version the other's has (0).
func TestDeleteCreatedNeverDeletesANodeMadeAgainThatItsServerHasNotSeen(t *testing.T) {
	t.Parallel()
	ens := testkit.NewLagging(t)
	p := ens.Root(t) + "/n"
	ctx := ctxFor(t, time.Minute)
	c := open(t, ens.Follower, connection.WithSessionTimeout(10*time.Second))
	if _, err := c.Create(ctx, p, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	mine := st.Czxid
	operator, other := ens.OnLeader(t), ens.OnLeader(t)
	const lag = 300 * time.Millisecond
	ens.Lag(t, lag)
	if err := operator.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	made := make(chan error, 1)
	go func() {
		_, err := other.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		made <- err
	}()
	time.Sleep(lag / 6) // the other's create reaches the leader first
	derr := c.DeleteCreated(ctx, p, mine)
	if err := <-made; err != nil {
		t.Fatalf("the other session's create: %v", err)
	}
	ens.Lag(t, 0)
	if _, err := operator.Sync(p); err != nil {
		t.Fatal(err)
	}
	ok, st, err := operator.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || st.EphemeralOwner != other.SessionID() {
		t.Errorf("DeleteCreated(czxid %#x) = %v deleted the node another session made at %s after ours was deleted (exists %v)", mine, derr, p, ok)
	}
}

// TestDeleteCreatedNeverResendsADeleteWhoseAnswerWasLost: DeleteCreated's
// delete applies and its answer is lost; before the client reconnects,
// another session makes a node at the path, at the same version (0). The
// retry must prove the node before it deletes: the other's node stays.
func TestDeleteCreatedNeverResendsADeleteWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	other := ens.Conn(t)
	lost := testkit.NewLostDelete(proxy, obs, other, p)
	c := open(t, proxy.Servers(), connection.WithObserver(lost.Observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Create(ctx, p, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	lost.Arm()
	derr := c.DeleteCreated(ctx, p, st.Czxid)
	lost.Made(t)
	ok, got, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || got.EphemeralOwner != other.SessionID() {
		t.Errorf("DeleteCreated = %v: the node another session made after the lost answer is gone (exists %v)", derr, ok)
	}
}

// TestDeleteCreatedDeletesItsNodeWrittenBetweenItsReadAndItsDelete: a
// write to the node (a revocation's) lands between DeleteCreated's read
// and its delete at the version read. The delete fails with BadVersion;
// DeleteCreated must read again and delete its node, and report nil.
func TestDeleteCreatedDeletesItsNodeWrittenBetweenItsReadAndItsDelete(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/n"
	obs := ens.Conn(t)
	var armed atomic.Bool
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op != "getData" || r.Path != p || !armed.CompareAndSwap(true, false) {
			return nil
		}
		return func(connection.RequestDone) {
			if _, err := obs.Set(p, []byte("__REVOKE__"), -1); err != nil {
				t.Errorf("the write between the read and the delete: %v", err)
			}
		}
	}}
	c := open(t, ens.Servers(), connection.WithObserver(observer))
	ctx := ctxFor(t, 20*time.Second)
	if _, err := c.Create(ctx, p, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	derr := c.DeleteCreated(ctx, p, st.Czxid)
	if armed.Load() {
		t.Fatal("DeleteCreated sent no read: not the case under test")
	}
	ok, _, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if derr != nil || ok {
		t.Errorf("DeleteCreated after a write between its read and its delete = %v, node still there %v", derr, ok)
	}
}
