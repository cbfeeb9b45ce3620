package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestTakeWhoseSessionExpiresAfterAWriteToItsTakenNodeIsNotADeletion: a
// worker's taken node is made and watched; before the hold starts, an
// operator writes to the node (its watch fires for a change of the data)
// and the worker's session expires, taking the node with it. Nobody
// deleted the node: the take must not fail with connection.ErrNodeDeleted
// (or ErrItemLost). The session's end restarts the take, which takes the
// item in the next session.
func TestTakeWhoseSessionExpiresAfterAWriteToItsTakenNodeIsNotADeletion(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 60*time.Second)
	obs := ens.Conn(t)
	p := ens.Proxy(t)

	// The take reads its entry before it confirms the hold: the fault is
	// made once that read is answered.
	f := testkit.NewOwnNodeFault(takenNode(path), entryRead(path), testkit.WrittenThenExpired(obs, p))
	c := open(t, p.Servers(), connection.WithObserver(f.Observer), connection.WithSessionTimeout(10*time.Second))
	sid := c.Session().ID()
	q := newQueue(t, c, path)
	if err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := q.Take(ctx)
	f.Made(t)
	if s := c.Session(); s == nil || s.ID() == sid {
		t.Fatal("the session did not change: not the case under test")
	}
	if errors.Is(err, connection.ErrNodeDeleted) || errors.Is(err, queue.ErrItemLost) {
		t.Fatalf("Take = %v; nobody deleted the taken node: it went with the expired session", err)
	}
	if err != nil {
		t.Fatalf("Take = %v; want the item, taken again in the next session", err)
	}
	if string(it.Data()) != "x" {
		t.Fatalf("Take gave %q", it.Data())
	}
	if err := it.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "nothing left of the take", func() error {
		return leftBehind(t, obs, path, "/taken", "/entries")
	})
}

// TestTakeNeverHoldsATakenNodeMadeAgainByAnother: a worker's taken node
// is made and watched; before the hold starts, an operator writes to it
// (its watch fires for a change of the data), deletes it, and another
// worker's session makes the taken node of the same item again. The
// worker's node is gone: its take must not hand out the item with a hold
// on the other worker's node (two workers would hold one item).
func TestTakeNeverHoldsATakenNodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 60*time.Second)
	obs := ens.Conn(t)
	other := ens.Conn(t) // the other worker's session

	f := testkit.NewOwnNodeFault(takenNode(path), entryRead(path), testkit.WrittenThenMadeAgain(obs, other))
	c := open(t, ens.Servers(), connection.WithObserver(f.Observer))
	q := newQueue(t, c, path)
	if err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	it, err := q.Take(tctx)
	f.Made(t)
	if err != nil {
		t.Logf("Take = %v", err) // no item: nothing held twice
		return
	}
	defer it.Release(ctx) //nolint:errcheck // the test's verdict is below
	kids, _, _ := obs.Children(path + "/taken")
	for _, k := range kids {
		_, st, err := obs.Get(path + "/taken/" + k)
		if err != nil {
			continue
		}
		if st.EphemeralOwner == other.SessionID() && !closed(it.Done()) {
			t.Fatalf("Take handed out item %s (token %#x) while the other worker's session holds its taken node %s (czxid %#x); the item's hold is open, its own node gone",
				it.Name(), it.Token(), k, st.Czxid)
		}
	}
}

// takenNode picks the taken nodes of the queue at path.
func takenNode(path string) func(string) bool {
	return func(p string) bool { return strings.HasPrefix(p, path+"/taken/") }
}

// entryRead picks a take's read of an entry of the queue at path, which
// it waits for before it confirms its hold.
func entryRead(path string) func(connection.Request) bool {
	return func(r connection.Request) bool {
		return r.Op == "getData" && !r.Watch && strings.HasPrefix(r.Path, path+"/entries/")
	}
}
