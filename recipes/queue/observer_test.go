package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
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

// TestObserverHearsEachWorkersWaitForAnItem: a Take with nothing to take
// is told as one queue wait — at the head of the line (nothing ahead) or
// parked behind the idle workers before it — that lasts through a session
// lost to a cut and ends once, when an item is taken, the Take's context
// ends or the queue closes. The cut ends the hold of the item taken before
// it once, as suspended.
func TestObserverHearsEachWorkersWaitForAnItem(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()), connection.WithSessionTimeout(2*time.Second))
	ctx := ctxFor(t, time.Minute)
	path := root + "/q"
	q := newQueue(t, c, path)
	t.Cleanup(func() { q.Close(context.Background()) })
	producer := newQueue(t, open(t, ens.Servers()), path)
	type taken struct {
		it  *queue.Item
		err error
	}
	take := func(ctx context.Context, waits int) <-chan taken {
		t.Helper()
		ch := make(chan taken, 1)
		go func() {
			it, err := q.Take(ctx)
			ch <- taken{it, err}
		}()
		zktest.Eventually(t, 10*time.Second, "the worker waits", func() error {
			if n := len(rec.Waits()); n != waits {
				return fmt.Errorf("%d waits", n)
			}
			return nil
		})
		return ch
	}
	put := func(d string) {
		t.Helper()
		if err := producer.Put(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}

	first := take(ctx, 1)  // at the head, nothing to take
	second := take(ctx, 2) // behind the first in line
	put("x")
	a := <-first
	if a.err != nil {
		t.Fatal(a.err)
	}
	// A cut that outlives the session: the item taken is lost, and back
	// in the queue once the server expires the session; the second
	// worker's wait goes on in the next session, and ends with it.
	p.Cut()
	<-a.it.Done()
	zktest.Eventually(t, 10*time.Second, "the session lost", func() error {
		if !slices.ContainsFunc(rec.States(), func(s connection.StateChange) bool { return s.State == connection.Lost }) {
			return errors.New("no LOST")
		}
		return nil
	})
	p.Restore()
	if _, err := c.WaitSession(ctx); err != nil {
		t.Fatal(err)
	}
	b := <-second
	if b.err != nil {
		t.Fatal(b.err)
	}
	if err := b.it.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	// A wait its context ends, and one the queue's Close ends.
	short, cancel := context.WithCancel(ctx)
	third := take(short, 3)
	cancel()
	if r := <-third; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Take cancelled = %v", r.err)
	}
	fourth := take(ctx, 4)
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-fourth; !errors.Is(r.err, queue.ErrClosed) {
		t.Fatalf("Take ended by Close = %v", r.err)
	}

	waits := rec.Waits()
	testkit.OnceEnded(t, "wait", waits)
	if len(waits) != 4 {
		t.Fatalf("waits %+v, want 4", waits)
	}
	for i, w := range waits {
		if w.Begin.Recipe != "queue" || w.Begin.Path != path || !strings.HasPrefix(w.Begin.Participant, path+"/") {
			t.Errorf("wait %d began %+v, want a worker's place in %s's line", i, w.Begin, path)
		}
	}
	if w := waits[0]; w.Begin.Ahead != 0 || w.Ends[0].Err != nil {
		t.Errorf("first wait %+v, want the head's, ended by its item", w)
	}
	if w := waits[1]; w.Begin.Ahead != 1 || w.Ends[0].Err != nil {
		t.Errorf("second wait %+v, want one worker ahead, ended by its item", w)
	}
	if err := waits[2].Ends[0].Err; !errors.Is(err, context.Canceled) {
		t.Errorf("third wait ended with %v, want its context's end", err)
	}
	if err := waits[3].Ends[0].Err; !errors.Is(err, queue.ErrClosed) {
		t.Errorf("fourth wait ended with %v, want the queue closed", err)
	}
	holds := rec.HoldsOf("queue")
	testkit.OnceEnded(t, "item", holds)
	if len(holds) != 2 || holds[0].Begin.Participant != holds[1].Begin.Participant || b.it.Name() != a.it.Name() {
		t.Fatalf("item holds %+v, want x's, lost and taken again", holds)
	}
	if cause := holds[0].Ends[0].Cause; !errors.Is(cause, connection.ErrSuspended) || cause.Error() != a.it.Err().Error() {
		t.Errorf("x's hold ended with %v, want the item's own cause %v (suspended)", cause, a.it.Err())
	}
	if end := holds[1].Ends[0]; end.Cause != nil || !end.Consumed {
		t.Errorf("x's second hold ended %+v, want consumed", end)
	}
}
