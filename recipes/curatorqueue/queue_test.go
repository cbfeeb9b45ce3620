package curatorqueue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

func takeItems(t *testing.T, q *curatorqueue.Queue, n int) []string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	var got []string
	for range n {
		m, err := q.TryTake(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, it := range m.Items() {
			got = append(got, string(it))
		}
		if err := m.Consume(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := q.TryTake(ctx); !errors.Is(err, curatorqueue.ErrEmpty) {
		t.Fatalf("after %v: took %v, %v; want ErrEmpty", got, m, err)
	}
	return got
}

// TestQueueTakesInPutOrderWithBatches: messages in the order put, a batch
// taken as one message whose items keep their order; without a lock path
// a message is gone once taken, and Release says so.
func TestQueueTakesInPutOrderWithBatches(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ctx := ctxFor(t, time.Minute)
	q := newQueue(t, open(t, ens.Servers()), ens.Root(t)+"/a/q", "plain")
	if _, err := q.TryTake(ctx); !errors.Is(err, curatorqueue.ErrEmpty) {
		t.Fatalf("TryTake of a new queue: %v, want ErrEmpty", err)
	}
	name, err := q.Put(ctx, []byte("a"))
	if err != nil || name != "queue-0000000000" {
		t.Fatalf("Put: %q, %v; want queue-0000000000", name, err)
	}
	if _, err := q.PutMulti(ctx, [][]byte{[]byte("b1"), []byte("b2"), {}}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Put(ctx, []byte("c")); err != nil {
		t.Fatal(err)
	}
	m, err := q.Take(ctx)
	if err != nil || string(m.Items()[0]) != "a" || m.Locked() || m.Done() != nil || m.Err() != nil {
		t.Fatalf("Take: %v, %v", m, err)
	}
	if err := m.Release(ctx); !errors.Is(err, curatorqueue.ErrNoLockPath) {
		t.Fatalf("Release without a lock path: %v, want ErrNoLockPath", err)
	}
	if got := takeItems(t, q, 2); !slices.Equal(got, []string{"b1", "b2", "", "c"}) {
		t.Fatalf("took %q", got)
	}
}

// TestPriorityQueueTakesLowerPrioritiesFirst: by priority, negative ones
// first, then in put order.
func TestPriorityQueueTakesLowerPrioritiesFirst(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ctx := ctxFor(t, time.Minute)
	q := newQueue(t, open(t, ens.Servers()), ens.Root(t)+"/pq", "priority")
	for _, p := range []struct {
		v string
		p int32
	}{{"p5", 5}, {"m3", -3}, {"p0a", 0}, {"p5b", 5}, {"p0b", 0}, {"max", 1<<31 - 1}, {"min", -1 << 31}} {
		if _, err := q.Put(ctx, []byte(p.v), curatorqueue.WithPriority(p.p)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Put(ctx, []byte("none")); err != nil { // priority 0
		t.Fatal(err)
	}
	want := []string{"min", "m3", "p0a", "p0b", "none", "p5", "p5b", "max"}
	if got := takeItems(t, q, len(want)); !slices.Equal(got, want) {
		t.Fatalf("took %q, want %q", got, want)
	}
}

// TestDelayQueueNeverTakesBeforeDue: a message is not taken before its
// time; due messages go by due time, whatever the put order.
func TestDelayQueueNeverTakesBeforeDue(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ctx := ctxFor(t, time.Minute)
	q := newQueue(t, open(t, ens.Servers()), ens.Root(t)+"/dq", "delay")
	now := time.Now()
	later := now.Add(1500 * time.Millisecond)
	for _, p := range []struct {
		v  string
		at time.Time
	}{{"later", later}, {"past2", now.Add(-time.Second)}, {"past1", now.Add(-2 * time.Second)}} {
		if _, err := q.Put(ctx, []byte(p.v), curatorqueue.WithDelayUntil(p.at)); err != nil {
			t.Fatal(err)
		}
	}
	if got := takeItems(t, q, 2); !slices.Equal(got, []string{"past1", "past2"}) {
		t.Fatalf("took %q, want the two due ones by due time", got)
	}
	m, err := q.Take(ctx)
	if err != nil || string(m.Items()[0]) != "later" {
		t.Fatalf("Take: %v, %v", m, err)
	}
	if took := time.Now(); took.Before(later) {
		t.Fatalf("taken %v before it was due", later.Sub(took))
	}
	if _, err := q.Put(ctx, []byte("x")); !errors.Is(err, curatorqueue.ErrWrongKind) {
		t.Fatalf("a delay queue's Put without a due time: %v, want ErrWrongKind", err)
	}
}

// TestIDQueueRemovesByID: ids in names as Curator writes them; Remove
// removes every message of an id and nothing else; order is put order.
func TestIDQueueRemovesByID(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ctx := ctxFor(t, time.Minute)
	q := newQueue(t, open(t, ens.Servers()), ens.Root(t)+"/iq", "id")
	for _, p := range []struct{ v, id string }{{"1", "b"}, {"2", "a/x"}, {"3", "b"}, {"4", "c"}} {
		name, err := q.Put(ctx, []byte(p.v), curatorqueue.WithID(p.id))
		if err != nil {
			t.Fatal(err)
		}
		if p.id == "a/x" && name != "queue-|a_x|0000000001" {
			t.Fatalf("name %q, want queue-|a_x|0000000001", name)
		}
	}
	if n, err := q.Remove(ctx, "b"); err != nil || n != 2 {
		t.Fatalf("Remove(b) = %d, %v; want 2", n, err)
	}
	if n, err := q.Remove(ctx, "nope"); err != nil || n != 0 {
		t.Fatalf("Remove(nope) = %d, %v; want 0", n, err)
	}
	if got := takeItems(t, q, 2); !slices.Equal(got, []string{"2", "4"}) {
		t.Fatalf("took %q", got)
	}
	if _, err := q.Put(ctx, []byte("x")); !errors.Is(err, curatorqueue.ErrWrongKind) {
		t.Fatalf("an id queue's Put without an id: %v, want ErrWrongKind", err)
	}
}

// TestQueueRefusesMisuse: options of another variant, bad paths and
// options, and use after Close are errors, never a panic.
func TestQueueRefusesMisuse(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, ens.Servers())
	root := ens.Root(t)
	plain := newQueue(t, c, root+"/q", "plain")
	for _, o := range []curatorqueue.PutOption{curatorqueue.WithPriority(1), curatorqueue.WithID("x"), curatorqueue.WithDelayUntil(time.Now())} {
		if _, err := plain.Put(ctx, nil, o); !errors.Is(err, curatorqueue.ErrWrongKind) {
			t.Errorf("plain Put with another variant's option: %v, want ErrWrongKind", err)
		}
	}
	pq := newQueue(t, c, root+"/pq", "priority")
	if _, err := pq.Put(ctx, nil, curatorqueue.WithPriority(1), curatorqueue.WithID("x")); !errors.Is(err, curatorqueue.ErrWrongKind) {
		t.Errorf("two variants' options: %v, want ErrWrongKind", err)
	}
	if _, err := pq.Remove(ctx, "x"); !errors.Is(err, curatorqueue.ErrWrongKind) {
		t.Errorf("Remove on a priority queue: %v, want ErrWrongKind", err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"empty id", put(ctx, newQueue(t, c, root+"/iq", "id"), curatorqueue.WithID("")), connection.ErrInvalidOption},
		{"zero due time", put(ctx, newQueue(t, c, root+"/dq", "delay"), curatorqueue.WithDelayUntil(time.UnixMilli(0))), connection.ErrInvalidOption},
		{"nil put option", put(ctx, plain, nil), connection.ErrInvalidOption},
		{"nil client", second(curatorqueue.New(nil, "/q")), connection.ErrInvalidOption},
		{"bad path", second(curatorqueue.New(c, "q")), connection.ErrInvalidPath},
		{"root", second(curatorqueue.NewSimple(c, "/")), connection.ErrInvalidPath},
		{"id queue path with |", second(curatorqueue.NewID(c, "/a|b")), connection.ErrInvalidPath},
		{"bad lock path", second(curatorqueue.New(c, "/q", curatorqueue.WithLockPath("l"))), connection.ErrInvalidPath},
		{"nil option", second(curatorqueue.New(c, "/q", nil)), connection.ErrInvalidOption},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if err := plain.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Put(ctx, nil); !errors.Is(err, curatorqueue.ErrClosed) {
		t.Errorf("Put after Close: %v", err)
	}
	if _, err := plain.Take(ctx); !errors.Is(err, curatorqueue.ErrClosed) {
		t.Errorf("Take after Close: %v", err)
	}
}

func put(ctx context.Context, q *curatorqueue.Queue, o curatorqueue.PutOption) error {
	_, err := q.Put(ctx, nil, o)
	return err
}

func second[T any](_ T, err error) error { return err }
