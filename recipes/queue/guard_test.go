package queue_test

import (
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// TestGuardOfWorkerWhoseTakenNodeAnotherWorkerOfItsClientRemakes: two
// workers on one client (one session). A has taken the queue's only item
// and writes results under its guard without pause; B waits in Take.
// Someone deletes A's taken node; B takes the item at once, making a node
// at A's path in the same session. None of A's results commits after the
// deletion: the client hears of the deletion (and A's take ends, on the
// receive loop) before anything that could make B take the item, so every
// transaction of A written after B's claim finds A's take over.
func TestGuardOfWorkerWhoseTakenNodeAnotherWorkerOfItsClientRemakes(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	obs := ens.Conn(t)
	for _, p := range []string{root + "/log", root + "/marks"} {
		if _, err := obs.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	qa, qb := newQueue(t, c, root+"/q"), newQueue(t, c, root+"/q")
	if err := qa.Put(ctx, []byte("item")); err != nil {
		t.Fatal(err)
	}
	a, err := qa.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type took struct {
		it  *queue.Item
		err error
	}
	taken := make(chan took, 1)
	go func() {
		it, err := qb.Take(ctx)
		taken <- took{it, err}
	}()
	time.Sleep(300 * time.Millisecond) // B waits in line

	writers := guardtest.StartWriters(t, 4, func() ([]zk.MultiResponse, error) {
		return c.Multi(ctx, a.Guard(), &zk.CreateRequest{Path: root + "/log/a-", Flags: zk.FlagSequence})
	})
	time.Sleep(200 * time.Millisecond)
	// The operator's delete, with a mark of its zxid.
	res, err := obs.Multi(&zk.DeleteRequest{Path: path.Join(root, "q", "taken", a.Name()), Version: -1},
		&zk.CreateRequest{Path: root + "/marks/deleted", Acl: zk.WorldACL(zk.PermAll)})
	if err != nil {
		t.Fatalf("operator's delete: %v %+v", err, res)
	}
	tb := <-taken
	if tb.err != nil {
		t.Fatalf("B's Take: %v", tb.err)
	}
	defer tb.it.Release(ctx)
	if tb.it.Name() != a.Name() {
		t.Fatalf("B took %s, want A's item %s", tb.it.Name(), a.Name())
	}
	time.Sleep(300 * time.Millisecond)
	writers.Stop()
	_, mark, err := obs.Get(root + "/marks/deleted")
	if err != nil {
		t.Fatal(err)
	}
	names, _, err := obs.Children(root + "/log")
	if err != nil {
		t.Fatal(err)
	}
	late := 0
	for _, n := range names {
		_, st, err := obs.Get(root + "/log/" + n)
		if err != nil {
			t.Fatal(err)
		}
		if st.Czxid > mark.Czxid {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d of A's results committed after its taken node was deleted (zxid %d), on B's node", late, mark.Czxid)
	}
	if int64(len(names)) != writers.Committed.Load() {
		t.Errorf("%d results on the server, %d answered as committed", len(names), writers.Committed.Load())
	}
	t.Logf("A: %d results committed, all before the deletion", writers.Committed.Load())
}
