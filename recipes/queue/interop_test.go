package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// TestKazooLockingQueueInterop: a Go worker and Kazoo's LockingQueue share
// one queue: order and priorities agree, an item one has taken is
// invisible to the other, consumed items are gone for both, released ones
// come back.
func TestKazooLockingQueueInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 2*time.Minute)
	q := newQueue(t, open(t, ens.Servers()), path)
	py := peertest.KazooQueue(t, ens.ConnectString(), path)

	for _, v := range []string{"a", "b", "c"} {
		if err := q.Put(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	py.Send("put k1")
	py.Expect("PUT", 10*time.Second)
	py.Send("len")
	if n := py.Expect("LEN", 10*time.Second); n != "4" {
		t.Fatalf("Kazoo counts %s items, want 4", n)
	}
	py.Send("get 5")
	if v := py.Expect("ITEM", 10*time.Second); v != "a" {
		t.Fatalf("Kazoo took %q, want a", v)
	}
	b, err := q.TryTake(ctx) // a is Kazoo's: invisible
	if err != nil || string(b.Data()) != "b" {
		t.Fatalf("Go took %v, %v, want b", b, err)
	}
	ents, err := q.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !ents[0].Taken || len(ents[0].Taker) == 0 || !ents[1].Taken || ents[2].Taken {
		t.Fatalf("entries %+v: a taken by Kazoo, b by Go", ents)
	}
	py.Send("consume")
	py.Expect("CONSUMED True", 10*time.Second)
	// Kazoo puts an urgent item: Go takes it before c.
	py.Send("put urgent 1")
	py.Expect("PUT", 10*time.Second)
	u, err := q.Take(ctx)
	if err != nil || string(u.Data()) != "urgent" {
		t.Fatalf("Go took %v, %v, want urgent", u, err)
	}
	if err := u.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	// Go releases b: Kazoo gets it back before c.
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	py.Send("get 5")
	if v := py.Expect("ITEM", 10*time.Second); v != "b" {
		t.Fatalf("Kazoo took %q, want b back", v)
	}
	py.Send("consume")
	py.Expect("CONSUMED True", 10*time.Second)
	c, err := q.Take(ctx)
	if err != nil || string(c.Data()) != "c" {
		t.Fatalf("Go took %v, %v, want c", c, err)
	}
	if err := c.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	py.Send("get 5")
	if v := py.Expect("ITEM", 10*time.Second); v != "k1" {
		t.Fatalf("Kazoo took %q, want k1", v)
	}
	py.Send("consume")
	py.Expect("CONSUMED True", 10*time.Second)
	if n, err := q.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v, want an empty queue", n, err)
	}
	if _, err := q.TryTake(ctx); err == nil {
		t.Fatal("TryTake on the emptied queue took something")
	} else if !isEmpty(err) {
		t.Fatal(err)
	}
}

func isEmpty(err error) bool { return err != nil && errors.Is(err, queue.ErrEmpty) }
