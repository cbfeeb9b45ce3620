package queue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// TestHeadCreateBeforeItsPlaceDeleteUnderLostAnswers is
// TestHeadCreateLeavesBeforeItsPlaceIsDeleted under faults: every fifth
// take, the answers to the taken node's create and what follows are lost
// for 300 ms (the requests apply; the connection comes back in the same
// session). For each place in line taken (create2), the create of the
// taken node must still reach the server before the place's delete.
func TestHeadCreateBeforeItsPlaceDeleteUnderLostAnswers(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 2*time.Minute)
	p := testkit.CountingProxy(t, ens.Servers())
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	sess := c.Session()
	q := newQueue(t, c, path)
	putter := newQueue(t, open(t, ens.Servers()), path)
	const (
		opDelete  = 2
		opCreate  = 1
		opCreate2 = 15
		n         = 40
	)
	var (
		mu       sync.Mutex
		events   []zkserver.WireEvent
		creates  int
		dropping bool
		armed    bool
	)
	zkserver.LogWire(p, func(ev zkserver.WireEvent) {
		if !ev.ToServer {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !armed {
			return
		}
		events = append(events, ev)
		if ev.Op != opCreate {
			return
		}
		creates++
		if creates%5 != 0 || dropping {
			return
		}
		dropping = true
		p.DropReplies()
		go func() {
			time.Sleep(300 * time.Millisecond)
			p.Restore()
			mu.Lock()
			dropping = false
			mu.Unlock()
		}()
	})
	defer zkserver.LogWire(p, nil)
	if err := q.Put(ctx, []byte("warm")); err != nil { // the directories
		t.Fatal(err)
	}
	it, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := it.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	armed = true
	mu.Unlock()
	for range n {
		if err := putter.Put(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		it, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := it.Consume(ctx); err != nil {
			t.Logf("Consume: %v", err)
		}
	}
	zkserver.LogWire(p, nil)
	mu.Lock()
	defer mu.Unlock()
	if c.Session() != sess {
		t.Fatal("the session changed: the run shows nothing")
	}
	takes, deleteFirst := 0, 0
	for i, ev := range events {
		if ev.Op != opCreate2 {
			continue
		}
		takes++
		for _, e := range events[i+1:] {
			if e.Op == opCreate2 || e.Op == opCreate {
				break
			}
			if e.Op == opDelete {
				deleteFirst++
				var ops []int32
				for _, e := range events[i:min(i+12, len(events))] {
					ops = append(ops, e.Op)
				}
				t.Logf("take %d: ops from its place's create2 on: %v", takes, ops)
				break
			}
		}
	}
	t.Logf("%d places, %d taken-node creates", takes, creates)
	if deleteFirst > 0 {
		t.Errorf("in %d of %d places the place's delete reached the server before the taken node's create", deleteFirst, takes)
	}
}
