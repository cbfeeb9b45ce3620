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
)

func TestObserverHearsEachItemTakenAndHowItEnded(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	other := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	path := root + "/q"
	q := newQueue(t, c, path)
	t.Cleanup(func() { q.Close(context.Background()) })
	for _, d := range []string{"a", "b"} {
		if err := q.Put(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	take := func() *queue.Item {
		t.Helper()
		it, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	var items []*queue.Item
	// Consumed; released and taken again; then lost: its taken node
	// deleted by an operator; then consumed.
	it := take()
	items = append(items, it)
	if err := it.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	it = take()
	items = append(items, it)
	if err := it.Release(ctx); err != nil {
		t.Fatal(err)
	}
	it = take()
	items = append(items, it)
	if err := other.Delete(path+"/taken/"+it.Name(), -1); err != nil {
		t.Fatal(err)
	}
	<-it.Done()
	if err := it.Consume(ctx); !errors.Is(err, queue.ErrItemLost) {
		t.Fatalf("Consume of a lost item: %v", err)
	}
	it = take()
	items = append(items, it)
	if err := it.Consume(ctx); err != nil {
		t.Fatal(err)
	}

	holds := rec.HoldsOf("queue")
	testkit.OnceEnded(t, "item", holds)
	if len(holds) != len(items) {
		t.Fatalf("item holds %+v, want %d", holds, len(items))
	}
	want := []struct {
		consumed bool
		cause    error
	}{{true, nil}, {false, nil}, {false, connection.ErrNodeDeleted}, {true, nil}}
	for i, w := range want {
		h := holds[i]
		if h.Begin.Path != path || !strings.HasSuffix(h.Begin.Participant, "/"+items[i].Name()) || h.Begin.Token != items[i].Token() {
			t.Errorf("item %d: %+v, want %s's taken node with token %d", i, h.Begin, items[i].Name(), items[i].Token())
		}
		end := h.Ends[0]
		if end.Consumed != w.consumed || (w.cause == nil) != (end.Cause == nil) || w.cause != nil && !errors.Is(end.Cause, w.cause) {
			t.Errorf("item %d ended %+v, want consumed %v, cause %v", i, end, w.consumed, w.cause)
		}
	}
}
