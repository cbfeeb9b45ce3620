package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// TestCloseReleasesTakesAndEndsCalls: Close ends a Take waiting on an
// empty queue (ErrClosed, its place in line gone), releases the items
// taken through the Queue and not finished (each take over before its
// delete: Done closed with ErrFinished, the item back in the queue for
// another worker), leaves a consumed item consumed, ends every goroutine
// the Queue started, and every later call fails with ErrClosed.
func TestCloseReleasesTakesAndEndsCalls(t *testing.T) {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 30*time.Second)
	q := newQueue(t, open(t, ens.Servers()), path)
	other := newQueue(t, open(t, ens.Servers()), path)
	zc := ens.Conn(t)
	before := goleak.IgnoreCurrent()

	for _, d := range []string{"a", "b", "c"} {
		if err := other.Put(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	var taken []*queue.Item
	for range 3 {
		it, err := q.TryTake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, it)
	}
	if err := taken[0].Consume(ctx); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := q.Take(ctx) // the queue's items are all taken: it waits
		waiting <- err
	}()
	for {
		n, err := q.Idle(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := q.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Take ended by Close = %v, want ErrClosed", err)
		}
	default:
		t.Error("a Take still runs after Close returned")
	}
	for _, it := range taken[1:] {
		if !closed(it.Done()) {
			t.Errorf("item %s: its take is not over after Close", it.Data())
		}
		if cause := context.Cause(it.Context()); !errors.Is(cause, queue.ErrFinished) {
			t.Errorf("item %s: cause after Close = %v, want ErrFinished", it.Data(), cause)
		}
		if err := it.Consume(ctx); !errors.Is(err, queue.ErrFinished) {
			t.Errorf("item %s: Consume after Close = %v, want ErrFinished", it.Data(), err)
		}
	}
	for _, dir := range []string{"/takers", "/taken"} {
		children, _, err := zc.Children(path + dir)
		if err != nil && !errors.Is(err, zk.ErrNoNode) || len(children) != 0 {
			t.Fatalf("%s after Close: %v, %v: want nothing", dir, children, err)
		}
	}
	testkit.VerifyNoGoroutinesSince(t, before)

	for _, want := range []string{"b", "c"} {
		it, err := other.TryTake(ctx)
		if err != nil || string(it.Data()) != want {
			t.Fatalf("another worker's TryTake after Close = %v, %v; want %s back", it, err, want)
		}
		if err := it.Consume(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.TryTake(ctx); !errors.Is(err, queue.ErrEmpty) {
		t.Errorf("TryTake of the emptied queue = %v, want ErrEmpty (the consumed item stays consumed)", err)
	}

	if err := q.Put(ctx, []byte("d")); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Put after Close = %v, want ErrClosed", err)
	}
	if _, err := q.Take(ctx); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Take after Close = %v, want ErrClosed", err)
	}
	if _, err := q.TryTake(ctx); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("TryTake after Close = %v, want ErrClosed", err)
	}
	if _, err := q.Entries(ctx); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Entries after Close = %v, want ErrClosed", err)
	}
	if _, err := q.Len(ctx); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Len after Close = %v, want ErrClosed", err)
	}
	if _, err := q.Idle(ctx); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Idle after Close = %v, want ErrClosed", err)
	}
	if err := q.Close(ctx); err != nil {
		t.Errorf("second Close = %v", err)
	}
}
