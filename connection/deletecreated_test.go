package connection_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
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
// alone. Its first attempt reads the node on the follower without a sync,
// finds the old node (its czxid, version 0) and deletes at version 0 —
// which, on the leader, is the other session's new node. The window is the
// follower's lag, not "one round trip" (DeleteCreated's doc); deleteIf and
// recipes/node's deleteOwn sync before they read.
func TestDeleteCreatedNeverDeletesANodeMadeAgainThatItsServerHasNotSeen(t *testing.T) {
	zktest.SkipIfShort(t)
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithSyncLimit(20*time.Second), zktest.WithServerPartitions())
	ens.RequireFaults(t)
	leader := ens.MustLeader(t)
	follower := (leader + 1) % 3
	addrs := ens.Servers()
	p := ens.Root(t) + "/n"
	ctx := ctxFor(t, time.Minute)
	c := open(t, addrs[follower:follower+1], connection.WithSessionTimeout(10*time.Second))
	if _, err := c.Create(ctx, p, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	mine := st.Czxid
	onLeader := func() *zk.Conn {
		conn, err := zktest.Connect(addrs[leader:leader+1], 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		return conn
	}
	operator, other := onLeader(), onLeader()
	if _, _, err := other.Exists("/"); err != nil { // connected
		t.Fatal(err)
	}
	const lag = 300 * time.Millisecond
	if err := ens.DelayServerLinks(lag); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ens.DelayServerLinks(0) })
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
	if err := ens.DelayServerLinks(0); err != nil {
		t.Fatal(err)
	}
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
	var armed atomic.Bool
	made := make(chan error, 1)
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op != "delete" || r.Path != p || !armed.CompareAndSwap(true, false) {
			return nil
		}
		proxy.DropReplies()
		go func() {
			defer proxy.Restore()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if ok, _, err := obs.Exists(p); err == nil && !ok {
					_, err := other.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
					made <- err
					return
				}
			}
			made <- errors.New("the delete never applied")
		}()
		return nil
	}}
	c := open(t, proxy.Servers(), connection.WithObserver(observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Create(ctx, p, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	derr := c.DeleteCreated(ctx, p, st.Czxid)
	if err := <-made; err != nil {
		t.Fatal(err)
	}
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
