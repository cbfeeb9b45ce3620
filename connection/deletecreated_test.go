package connection_test

import (
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
