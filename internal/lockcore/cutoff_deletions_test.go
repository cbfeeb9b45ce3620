package lockcore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestDeletionsWhileCutOffReachWatchesOfOneSetWatches: two waiters A and
// B of one client, behind a holder H of another, have set their watches
// in one setWatches each (A: its own node and H's; B: its own, A's and
// H's). Their client's connection is cut; an operator deletes H's node;
// the connection comes back within the session (SessionPolicy: the
// holds live through the cut). The client registers the watches again
// itself, at the zxid of the last reply it read: H's deletion fires, and
// A holds — a watch of a setWatches not carried over would leave it
// waiting for ever. A's hold then rests on its own node's watch from that
// setWatches: cut again, an operator deletes A's node, and once back A's
// Done closes and B holds. The server's first contender agrees each time.
func TestDeletionsWhileCutOffReachWatchesOfOneSetWatches(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	p := countingProxy(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	h := newLock(t, open(t, ens.Servers()), lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	pc := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	ops := logRequests(p)
	defer zkserver.LogWire(p, nil)
	count := func(op int32) int {
		n := 0
		for _, o := range ops() {
			if o == op {
				n++
			}
		}
		return n
	}
	queued := func(n int) { waitNodes(t, obs, lock, n, 10*time.Second, fmt.Sprintf("%d queued", n)) }
	a, b := newLock(t, pc, lock), newLock(t, pc, lock)
	ea, eb := make(chan error, 1), make(chan error, 1)
	go func() { ea <- a.Lock(ctx) }()
	queued(2)
	go func() { eb <- b.Lock(ctx) }()
	queued(3)
	zktest.Eventually(t, 10*time.Second, "both waiters' setWatches", func() error {
		if n := count(opSetWatches); n < 2 {
			return fmt.Errorf("%d setWatches", n)
		}
		return nil
	})
	cutAndDelete := func(node string) int {
		before := count(opSetWatches)
		p.Cut()
		time.Sleep(200 * time.Millisecond)
		if err := obs.Delete(node, -1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		p.Restore()
		return before
	}
	mustHold := func(who string, m interface {
		Node() string
		Held() bool
	}, errc chan error) {
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("%s: %v", who, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s missed the deletion of its predecessor: no hold 20 s after the connection came back", who)
		}
		if first, err := firstContender(obs, lock); err != nil || first != m.Node() {
			t.Fatalf("%s holds %s, the server's first contender is %s (%v)", who, m.Node(), first, err)
		}
	}
	hnode := h.Node()
	before := cutAndDelete(hnode)
	mustHold("A", a, ea)
	if b.Held() {
		t.Fatal("B holds beside A")
	}
	if count(opSetWatches) == before {
		t.Error("no setWatches after the reconnect: the watches were not registered again")
	}
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("H's node is gone and its Done is open")
	}
	if closed(a.Done()) {
		t.Fatal("A's Done closed at once")
	}
	anode := a.Node()
	cutAndDelete(anode)
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("A's node %s was deleted while cut off and its Done is still open 20 s after the connection came back", anode)
	}
	mustHold("B", b, eb)
	seen := ops()
	reads := slices.ContainsFunc(seen, func(o int32) bool { return o == opExists || o == 4 })
	t.Logf("the waiters' client's requests: %v", seen)
	if reads {
		t.Log("a node was read: some watch was set by a read, not all by setWatches")
	}
	_ = a.Unlock(ctx)
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	_ = h.Unlock(ctx)
}
