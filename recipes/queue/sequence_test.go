package queue_test

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/seqserver"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// TestPutAtTheSequenceLimit: once the entries directory's counter reaches
// 2^31-1, Put fails with connection.ErrSequenceExhausted and leaves no
// entry — the first put at the limit, a put whose name a producer that
// does not refuse it (Kazoo) took, and puts in flight together, which
// ZooKeeper numbers below 0 (ahead of every item). The items put before
// are taken in their order.
func TestPutAtTheSequenceLimit(t *testing.T) {
	s := seqserver.Start(t)
	c := open(t, s.Servers())
	ctx := ctxFor(t, time.Minute)
	q := newQueue(t, c, "/q")
	for _, dir := range []string{"/q/entries", "/q/taken"} {
		if err := c.EnsurePath(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	s.SetCounter(t, "/q/entries", math.MaxInt32-2)

	for _, item := range []string{"a", "b"} {
		if err := q.Put(ctx, []byte(item)); err != nil {
			t.Fatal(err)
		}
	}
	exhausted := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, connection.ErrSequenceExhausted) {
			t.Fatalf("%s: %v, want ErrSequenceExhausted", what, err)
		}
	}
	exhausted("put at the limit", q.Put(ctx, []byte("c")))
	exhausted("put of another priority", q.Put(ctx, []byte("d"), queue.WithPriority(5)))
	entries := func(want int) {
		t.Helper()
		names, _, err := c.Children(ctx, "/q/entries")
		if err != nil || len(names) != want {
			t.Fatalf("entries %q, %v; want %d", names, err, want)
		}
		if taken, _, _ := c.Children(ctx, "/q/taken"); len(taken) != 0 {
			t.Fatalf("taken nodes left: %q", taken)
		}
	}
	entries(2)

	// A producer that keeps its entry at the limit: the next put meets
	// its name.
	kazoo, err := c.Create(ctx, "/q/entries/entry-100-", []byte("k"), connection.PersistentSequential)
	if err != nil || !strings.HasSuffix(kazoo, "-2147483647") {
		t.Fatalf("raw put: %q, %v", kazoo, err)
	}
	exhausted("put meeting a name at the limit", q.Put(ctx, []byte("e")))
	entries(3)

	for _, want := range []string{"a", "b", "k"} {
		it, err := q.TryTake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(it.Data()) != want {
			t.Fatalf("took %q, want %q", it.Data(), want)
		}
		if err := it.Consume(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Puts in flight together, from several clients: one at a time is
	// numbered 2147483647, and puts prepared while it is in flight are
	// numbered from -2147483648 up; the rest meet a name taken. None is
	// kept.
	var wg sync.WaitGroup
	errs := make([]error, 64)
	var qs []*queue.Queue
	for range 4 {
		qs = append(qs, newQueue(t, open(t, s.Servers()), "/q"))
	}
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = qs[i%len(qs)].Put(ctx, []byte("f"))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		exhausted("put in flight", err)
	}
	entries(0)
}

// TestTakeAtTheSequenceLimit: the line of idle workers is a lock
// directory; a worker whose place in it is numbered at the limit fails
// with connection.ErrSequenceExhausted and leaves no node.
func TestTakeAtTheSequenceLimit(t *testing.T) {
	s := seqserver.Start(t)
	c := open(t, s.Servers())
	ctx := ctxFor(t, time.Minute)
	if err := c.EnsurePath(ctx, "/q/takers"); err != nil {
		t.Fatal(err)
	}
	s.SetCounter(t, "/q/takers", math.MaxInt32)
	if _, err := newQueue(t, c, "/q").Take(ctx); !errors.Is(err, connection.ErrSequenceExhausted) {
		t.Fatalf("take: %v, want ErrSequenceExhausted", err)
	}
	if names, _, err := c.Children(ctx, "/q/takers"); err != nil || len(names) != 0 {
		t.Fatalf("line %q, %v; want empty", names, err)
	}
}
