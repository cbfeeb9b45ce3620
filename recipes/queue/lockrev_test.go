package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
				for _, dir := range []string{"/taken", "/takers"} {
					if left := children(t, obs, path+dir); len(left) > 0 {
						return fmt.Errorf("%s: %v left", dir, left)
					}
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
			for _, dir := range []string{"/taken", "/takers", "/entries"} {
				if left := children(t, obs, path+dir); len(left) > 0 {
					t.Errorf("%s: %v left", dir, left)
				}
			}
		})
	}
}
