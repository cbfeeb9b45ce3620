package semaphore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestObserverHearsEachLeaseAsAHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, 30*time.Second)
	path := root + "/sem"
	s := newSem(t, c, path, 2)
	leases, err := s.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := rec.HoldsOf("semaphore")
	testkit.OnceEnded(t, "lease", got)
	if len(got) != len(leases) {
		t.Fatalf("semaphore holds %+v, want %d", got, len(leases))
	}
	for i, l := range leases {
		h := got[i]
		if h.Begin.Path != path || h.Begin.Participant != l.Node() || h.Begin.Token != l.Token() || h.Ends[0].Cause != nil {
			t.Errorf("lease %d: %+v %+v, want %s with token %d, released", i, h.Begin, h.Ends, l.Node(), l.Token())
		}
	}
}

// waitsOf returns the waits of recipe rec recorded so far.
func waitsOf(rec *testkit.Recorder, recipe string) []testkit.Recorded[connection.Wait, connection.WaitDone] {
	var of []testkit.Recorded[connection.Wait, connection.WaitDone]
	for _, w := range rec.Waits() {
		if w.Begin.Recipe == recipe {
			of = append(of, w)
		}
	}
	return of
}

// TestObserverHearsTheWaitForALease: an acquirer that finds every lease
// taken is told as a semaphore wait, with its lease node and the leases to
// be released before it fits; the wait ends when the lease is granted, and
// once when a cut ends it (the acquire mutex suspended).
func TestObserverHearsTheWaitForALease(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, 30*time.Second)
	path := root + "/sem"
	s, other := newSem(t, c, path, 1), newSem(t, open(t, ens.Servers()), path, 1)
	taken, err := other.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		leases []*semaphore.Lease
		err    error
	}
	acquire := func() <-chan result {
		ch := make(chan result, 1)
		go func() {
			leases, err := s.Acquire(ctx, 1)
			ch <- result{leases, err}
		}()
		return ch
	}
	waiting := func(n int) {
		t.Helper()
		zktest.Eventually(t, 10*time.Second, "the acquirer waits", func() error {
			if got := len(waitsOf(rec, "semaphore")); got != n {
				return fmt.Errorf("%d semaphore waits", got)
			}
			return nil
		})
	}

	// Granted once the other lease goes.
	got := acquire()
	waiting(1)
	if err := taken[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	granted := r.leases[0]
	if err := granted.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if taken, err = other.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	defer taken[0].Release(ctx)

	// Ended by a cut: the acquire mutex is suspended.
	got = acquire()
	waiting(2)
	p.Cut()
	r = <-got
	p.Restore()
	if !errors.Is(r.err, connection.ErrSuspended) || !errors.Is(r.err, mutex.ErrLockLost) {
		t.Fatalf("Acquire cut off = %v, want the acquire mutex lost, suspended", r.err)
	}

	waits := waitsOf(rec, "semaphore")
	testkit.OnceEnded(t, "wait", waits)
	if len(waits) != 2 {
		t.Fatalf("semaphore waits %+v, want 2", waits)
	}
	for i, w := range waits {
		if w.Begin.Path != path || !strings.HasPrefix(w.Begin.Participant, path+"/leases/") || w.Begin.Ahead != 1 {
			t.Errorf("wait %d began %+v, want a lease node of %s, one lease ahead", i, w.Begin, path)
		}
	}
	if w := waits[0]; w.Begin.Participant != granted.Node() || w.Ends[0].Err != nil {
		t.Errorf("first wait %+v, want %s's, ended by its grant", w, granted.Node())
	}
	if err := waits[1].Ends[0].Err; !errors.Is(err, connection.ErrSuspended) {
		t.Errorf("second wait ended with %v, want suspended", err)
	}
	if n := len(waitsOf(rec, "mutex")); n != 0 {
		t.Errorf("%d waits for the acquire mutex, want none: no other acquirer held it", n)
	}
	holds := rec.HoldsOf("semaphore")
	testkit.OnceEnded(t, "lease", holds)
	if len(holds) != 1 || holds[0].Begin.Participant != granted.Node() || holds[0].Ends[0].Cause != nil {
		t.Errorf("leases %+v, want the one granted, released", holds)
	}
}
