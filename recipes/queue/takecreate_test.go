package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestTakeCancelledAroundItsCreate cancels a Take's context at the two
// moments the head of the line is out of it with a create of its own:
// after it started to leave and before the create is sent, and the moment
// the create is answered (before the entry is read). Take must return an
// error matching context.Canceled, hold nothing, and leave nothing: no
// taken node and no place in line, the item available to the next worker.
func TestTakeCancelledAroundItsCreate(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"before the create", "once the create is answered"} {
		t.Run(at, func(t *testing.T) {
			ens := shared.Ensemble(t)
			path := ens.Root(t) + "/q"
			ctx := ctxFor(t, 30*time.Second)
			obs := ens.Conn(t)
			q := newQueue(t, open(t, ens.Servers()), path)
			tctx, cancel := context.WithCancel(ctx)
			defer cancel()
			hook := queue.BeforeTakenCreate
			if at != "before the create" {
				hook = queue.AfterTakenMade
			}
			hook(q, cancel)
			ch := takeAsync(tctx, q)
			waitIdle(t, ctx, q, 1)
			if err := q.Put(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
			tk := <-ch
			if tk.it != nil || !errors.Is(tk.err, context.Canceled) {
				t.Fatalf("cancelled Take = %v, %v; want nil and context.Canceled", tk.it, tk.err)
			}
			zktest.Eventually(t, 10*time.Second, "nothing left of the cancelled take", func() error {
				if err := leftBehind(t, obs, path, "/taken", "/takers"); err != nil {
					return err
				}
				return nil
			})
			q2 := newQueue(t, open(t, ens.Servers()), path)
			it, err := q2.TryTake(ctx)
			if err != nil || string(it.Data()) != "x" {
				t.Fatalf("the next worker's TryTake = %v, %v; want the item", it, err)
			}
			if err := it.Consume(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWorkerDiesAroundItsCreate closes a worker's client at the moments
// the head of the line is out of it with a create of its own (as in
// TestTakeCancelledAroundItsCreate). Take must fail with an error, and the
// item must come back: another client's worker takes it, and nothing of
// the dead worker is left (its taken node and place went with its
// session).
func TestWorkerDiesAroundItsCreate(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"before the create", "once the create is answered"} {
		t.Run(at, func(t *testing.T) {
			ens := shared.Ensemble(t)
			path := ens.Root(t) + "/q"
			ctx := ctxFor(t, 30*time.Second)
			obs := ens.Conn(t)
			c := open(t, ens.Servers())
			q := newQueue(t, c, path)
			closing := make(chan struct{})
			hook := queue.BeforeTakenCreate
			if at != "before the create" {
				hook = queue.AfterTakenMade
			}
			hook(q, func() {
				go func() { defer close(closing); c.Close() }()
				<-closing
			})
			ch := takeAsync(ctx, q)
			waitIdle(t, ctx, q, 1)
			q2 := newQueue(t, open(t, ens.Servers()), path)
			if err := q2.Put(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
			tk := <-ch
			if tk.it != nil || tk.err == nil {
				t.Fatalf("Take of a closed client = %v, %v; want an error", tk.it, tk.err)
			}
			t.Logf("Take: %v", tk.err)
			it, err := q2.Take(ctx)
			if err != nil || string(it.Data()) != "x" {
				t.Fatalf("the next worker's Take = %v, %v; want the item", it, err)
			}
			if err := it.Consume(ctx); err != nil {
				t.Fatal(err)
			}
			if err := leftBehind(t, obs, path, "/taken", "/takers", "/entries"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestHeadCreateLeavesBeforeItsPlaceIsDeleted checks on the wire what
// docs/queue.md says of the early leave: the delete of the head's place
// goes out behind the create of its taken node. A worker takes 40 items,
// one at a time, through a counting proxy; for each take, the create of
// its taken node (opCreate) must be written before the delete of its
// place in line (opDelete). (The first place's create2 may fail once, the
// line's container not being there yet: 41 places.)
//
// Safety does not depend on the order (the taken node alone decides), but
// fairness does: a next in line that hears the delete first can list the
// item free and take it with its own create, and ours is refused — the
// worker that was first lines up again at the back. So the delete goes
// out behind the create, rather than racing it from a goroutine of its
// own, which under load loses now and then.
func TestHeadCreateLeavesBeforeItsPlaceIsDeleted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, time.Minute)
	p := testkit.CountingProxy(t, ens.Servers())
	q := newQueue(t, open(t, p.Servers()), path)
	putter := newQueue(t, open(t, ens.Servers()), path)
	const (
		opDelete  = 2
		opCreate  = 1
		opCreate2 = 15
		n         = 40
	)
	var (
		mu     sync.Mutex
		events []zkserver.WireEvent
	)
	zkserver.LogWire(p, func(ev zkserver.WireEvent) {
		if ev.ToServer {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}
	})
	for range n {
		if err := putter.Put(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		it, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := it.Consume(ctx); err != nil {
			t.Fatal(err)
		}
	}
	zkserver.LogWire(p, nil)
	mu.Lock()
	defer mu.Unlock()
	takes, deleteFirst := 0, 0
	for i, ev := range events {
		if ev.Op != opCreate2 { // a place in line
			continue
		}
		takes++
		for _, e := range events[i+1:] {
			if e.Op == opCreate2 {
				break
			}
			if e.Op == opDelete {
				deleteFirst++
				var ops []int32
				for _, e := range events[i:min(i+12, len(events))] {
					ops = append(ops, e.Op)
				}
				t.Logf("take %d: ops written from its place's create2 on: %v", takes, ops)
				break
			}
			if e.Op == opCreate {
				break
			}
		}
	}
	if takes < n {
		t.Fatalf("%d places in line seen on the wire for %d takes", takes, n)
	}
	if deleteFirst > 0 {
		t.Errorf("in %d of %d takes the place's delete was written before the taken node's create", deleteFirst, takes)
	}
}
