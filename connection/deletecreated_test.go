package connection_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
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
