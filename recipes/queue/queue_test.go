package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

func TestNewAndPutRefuseBadInput(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	for _, tc := range []struct {
		name string
		c    *connection.Client
		path string
		want error
	}{
		{"nil client", nil, "/q", connection.ErrInvalidOption},
		{"relative", c, "q", connection.ErrInvalidPath},
		{"dot segment", c, "/q/./x", connection.ErrInvalidPath},
		{"root", c, "/", connection.ErrInvalidPath},
	} {
		if _, err := queue.New(tc.c, tc.path); !errors.Is(err, tc.want) {
			t.Errorf("%s: New = %v, want %v", tc.name, err, tc.want)
		}
	}
	q := newQueue(t, c, ens.Root(t)+"/q")
	ctx := ctxFor(t, 30*time.Second)
	for _, p := range []int{-1, 1000} {
		if err := q.Put(ctx, nil, queue.WithPriority(p)); !errors.Is(err, queue.ErrInvalidPriority) {
			t.Errorf("Put with priority %d = %v, want ErrInvalidPriority", p, err)
		}
	}
	if _, err := q.TryTake(ctx); !errors.Is(err, queue.ErrEmpty) {
		t.Errorf("TryTake on an empty queue = %v, want ErrEmpty", err)
	}
}

// TestOrderConsumeRelease: items come out by priority, then in the order they
// were put; a taken item is invisible to other workers; Release puts it
// back at its place; Consume removes it; misuse gets its sentinel.
func TestOrderConsumeRelease(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 30*time.Second)
	q := newQueue(t, open(t, ens.Servers()), path)
	other := newQueue(t, open(t, ens.Servers()), path)
	for _, p := range []struct {
		data string
		prio int
	}{{"a", 100}, {"b", 100}, {"urgent", 5}, {"c", 100}, {"late", 500}} {
		if err := q.Put(ctx, []byte(p.data), queue.WithPriority(p.prio)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := q.Len(ctx); err != nil || n != 5 {
		t.Fatalf("Len = %d, %v", n, err)
	}
	take := func(q *queue.Queue, want string) *queue.Item {
		t.Helper()
		it, err := q.TryTake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(it.Data()) != want {
			t.Fatalf("took %q (%s), want %q", it.Data(), it.Name(), want)
		}
		return it
	}
	urgent := take(q, "urgent")
	a := take(other, "a") // urgent is taken: invisible
	if err := urgent.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !closed(urgent.Done()) || !errors.Is(context.Cause(urgent.Context()), queue.ErrFinished) {
		t.Fatal("a released item's Done is open or its cause is wrong")
	}
	if err := urgent.Consume(ctx); !errors.Is(err, queue.ErrFinished) {
		t.Fatalf("Consume after Release = %v, want ErrFinished", err)
	}
	again := take(q, "urgent") // back at its place
	if again.Token() <= urgent.Token() {
		t.Fatalf("tokens %d then %d: a second take must have a higher token", urgent.Token(), again.Token())
	}
	ents, err := q.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 5 || ents[0].Name != again.Name() || !ents[0].Taken || !ents[1].Taken || ents[2].Taken {
		t.Fatalf("entries %+v", ents)
	}
	for _, it := range []*queue.Item{again, a} {
		if err := it.Consume(ctx); err != nil {
			t.Fatal(err)
		}
	}
	take(q, "b")
	take(other, "c")
	take(q, "late")
	if n, err := q.Len(ctx); err != nil || n != 3 {
		t.Fatalf("Len = %d, %v, want 3 (taken items stay until consumed)", n, err)
	}
}

// TestWorkerCrashPutsItemBack: an item taken by a worker whose session
// ends goes back to its place, ahead of items put after it.
func TestWorkerCrashPutsItemBack(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 30*time.Second)
	crashing := open(t, ens.Servers())
	q1 := newQueue(t, crashing, path)
	q2 := newQueue(t, open(t, ens.Servers()), path)
	for i := range 3 {
		if err := q2.Put(ctx, fmt.Appendf(nil, "item-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	it, err := q1.TryTake(ctx)
	if err != nil || string(it.Data()) != "item-0" {
		t.Fatalf("TryTake = %v, %v", it, err)
	}
	next, err := q2.TryTake(ctx)
	if err != nil || string(next.Data()) != "item-1" {
		t.Fatalf("TryTake = %v, %v", next, err)
	}
	crashing.Close()
	<-it.Done()
	back, err := q2.Take(ctx)
	if err != nil || string(back.Data()) != "item-0" {
		t.Fatalf("Take after the crash = %v, %v, want item-0 back", back, err)
	}
	if err := it.Consume(ctx); !errors.Is(err, queue.ErrItemLost) {
		t.Fatalf("Consume by the crashed worker = %v, want ErrItemLost", err)
	}
}

// TestCancelledTakeLeavesNothing: a Take that stops waiting leaves no
// place in line and no taken node.
func TestCancelledTakeLeavesNothing(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 30*time.Second)
	q := newQueue(t, open(t, ens.Servers()), path)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			if _, err := q.Take(tctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Take on an empty queue = %v, want DeadlineExceeded", err)
			}
		}()
	}
	wg.Wait()
	zc := ens.Conn(t)
	for _, dir := range []string{"/takers", "/taken"} {
		children, _, err := zc.Children(path + dir)
		if errors.Is(err, zk.ErrNoNode) {
			continue // the line is a container: the server removes it once empty
		}
		if err != nil || len(children) != 0 {
			t.Fatalf("%s: %v, %v: want nothing left", dir, children, err)
		}
	}
}

// TestNoHerd: with 50 idle workers, each on its own session, a put wakes
// a few of them (the first in line, the next moving up), not all.
func TestNoHerd(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, time.Minute)
	const workers, items = 50, 20
	var clients []*connection.Client
	took := make(chan string, items)
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range workers {
		c := open(t, ens.Servers())
		clients = append(clients, c)
		q := newQueue(t, c, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, err := q.Take(wctx)
				if err != nil {
					return
				}
				took <- string(it.Data())
				if err := it.Consume(wctx); err != nil && wctx.Err() == nil {
					t.Error(err)
				}
			}
		}()
	}
	putter := newQueue(t, open(t, ens.Servers()), path)
	for {
		n, err := putter.Idle(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == workers {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the line's own wake-ups settle
	notifications := func() (n int64) {
		for _, c := range clients {
			n += c.Stats().Notifications
		}
		return n
	}
	before := notifications()
	for i := range items {
		if err := putter.Put(ctx, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
		<-took
		time.Sleep(20 * time.Millisecond) // the worker is back in line
	}
	woken := notifications() - before
	perItem := float64(woken) / items
	t.Logf("%d idle workers: %d watch notifications for %d items, %.1f per item", workers, woken, items, perItem)
	stop()
	wg.Wait()
	// Per item: the first in line hears the put; the next in line hears
	// its predecessor leave and then, watching the one taken entry, the
	// entry done (two watches, one transaction); the taker hears its own
	// taken node go (the watch that ends a take whose node someone else
	// deletes); a worker coming back to the line is heard by no one. Five,
	// whatever the number of idle workers; a herd would be about a
	// hundred.
	if perItem > 7 {
		t.Fatalf("%.1f wake-ups per item with %d idle workers: a herd", perItem, workers)
	}
}
