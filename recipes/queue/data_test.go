package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
)

// TestEmptyItemReachesKazoo: an item put with nil data is sent as empty
// data, not null. Kazoo 2.8's LockingQueue.get returns None for a null
// item while keeping it taken, which stalls its worker on it (the driver
// then says TIMEOUT); an empty item it delivers as b"".
func TestEmptyItemReachesKazoo(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, time.Minute)
	q := newQueue(t, open(t, ens.Servers()), path)
	if err := q.Put(ctx, nil); err != nil {
		t.Fatal(err)
	}
	py := peertest.KazooQueue(t, ens.ConnectString(), path)
	py.Send("get 5")
	if v := py.Expect("ITEM", 10*time.Second); v != "" {
		t.Fatalf("Kazoo took %q, want the empty item", v)
	}
	py.Send("consume")
	py.Expect("CONSUMED True", 10*time.Second)
	if n, err := q.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v after Kazoo consumed the item, want 0", n, err)
	}
}

// TestOversizeItemIsRefusedBeforeSending: an item larger than the server
// reads in one request (its jute.maxbuffer, 1 MiB less a byte by default)
// fails Put with ErrDataTooLarge without being sent. Sent, it made the
// server close the connection, and under the standard policy every hold
// of the client was lost with it: here a take of another worker on the
// same client stays trusted, and the client never leaves CONNECTED.
func TestOversizeItemIsRefusedBeforeSending(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, time.Minute)
	c := open(t, ens.Servers())
	states := c.Listen(ctx) // transitions from now on: there must be none
	worker, putter := newQueue(t, c, path), newQueue(t, c, path)
	if err := putter.Put(ctx, []byte("small")); err != nil {
		t.Fatal(err)
	}
	it, err := worker.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replies := c.Stats().Replies
	err = putter.Put(ctx, make([]byte, 1<<20))
	if !errors.Is(err, connection.ErrDataTooLarge) {
		t.Fatalf("Put of 1 MiB = %v, want ErrDataTooLarge", err)
	}
	if n := c.Stats().Replies - replies; n != 0 {
		t.Errorf("the refused Put was answered %d times: it was sent", n)
	}
	// Anything the server did to the connection would show by now: a
	// closed connection is seen at once, long before the session's
	// timeout.
	select {
	case s := <-states:
		t.Fatalf("the client went %v after the refused Put", s)
	case <-it.Done():
		t.Fatalf("the take on the same client was lost: %v", it.Context().Err())
	case <-time.After(time.Second):
	}
	if err := it.Consume(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLenCountsItemsOnly: a node in the entries directory that is not an
// item (an operator's, a typo) is not counted: Len says how many items
// Take can deliver.
func TestLenCountsItemsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, time.Minute)
	c := open(t, ens.Servers())
	q := newQueue(t, c, path)
	if err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, path+"/entries/not-an-item", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Len(ctx); err != nil || n != 1 {
		t.Fatalf("Len = %d, %v, want 1", n, err)
	}
}
