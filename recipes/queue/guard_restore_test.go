package queue_test

import (
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// TestTakeEndsWhenItsTakenNodeIsReplacedDuringCut: worker A (session
// policy) has taken the queue's one item and is cut off for a moment.
// Meanwhile someone deletes A's taken node (an operator) and worker B, on
// another client, takes the item: B's taken node is at A's path. When A
// reconnects, the server answers the watch A sets again with
// NodeDataChanged (a node is at the path, modified since A last heard),
// not NodeDeleted. Taken for a change of its own node, it would let A's
// take go on: Done never closing, A's guarded result committing while B
// works on the item, and A's Consume removing the item from under B (its
// transaction deleting B's taken node). So the take, like the naive lock's
// hold (TestHoldEndsWhenItsNodeIsReplacedDuringCut), ends when a read
// after the change finds another czxid at its path.
func TestTakeEndsWhenItsTakenNodeIsReplacedDuringCut(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	ac := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	bc := open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	if _, err := obs.Create(root+"/results", []byte("none"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	result := func(v string) *zk.SetDataRequest {
		return &zk.SetDataRequest{Path: root + "/results", Data: []byte(v), Version: -1}
	}
	qa, qb := newQueue(t, ac, root+"/q"), newQueue(t, bc, root+"/q")
	if err := qa.Put(ctx, []byte("item")); err != nil {
		t.Fatal(err)
	}
	a, err := qa.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	takenPath := root + "/q/taken/" + a.Name()
	states := ac.Listen(ctx)

	p.Cut()
	testkit.WaitState(t, states, connection.Suspended, 20*time.Second)
	if err := obs.Delete(takenPath, -1); err != nil { // an operator
		t.Fatal(err)
	}
	b, err := qb.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != a.Name() {
		t.Fatalf("B took %s, want A's item %s", b.Name(), a.Name())
	}
	p.Restore()
	testkit.WaitState(t, states, connection.Reconnected, 20*time.Second)
	if err := ac.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}
	_, err = ac.Multi(ctx, a.Guard(), result("a"))
	t.Logf("A's guarded result after Reconnected: %v", err)
	if data, _, gerr := obs.Get(root + "/results"); gerr != nil || string(data) != "none" || err == nil {
		t.Errorf("A's guarded result committed while B holds the item: Multi %v, results %q (%v), want ErrGuardFailed and nothing written", err, data, gerr)
	} else if !errors.Is(err, connection.ErrGuardFailed) {
		t.Errorf("A's guarded result: %v, want ErrGuardFailed", err)
	}
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Errorf("A's Done still open 5s after Reconnected, though B's taken node (token %d, A's %d) is at its path", b.Token(), a.Token())
	}
	cerr := a.Consume(ctx)
	if _, _, err := obs.Get(path.Join(root, "q", "entries", a.Name())); err != nil {
		t.Errorf("A's Consume (%v) removed the item B holds: %v", cerr, err)
	}
	_ = b.Release(ctx)
}
