package barrier_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// waitsTold waits until rec holds n waits.
func waitsTold(t *testing.T, rec *testkit.Recorder, n int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, "the wait told", func() error {
		if got := len(rec.Waits()); got != n {
			return fmt.Errorf("%d waits, want %d", got, n)
		}
		return nil
	})
}

// TestObserverHearsABarriersWaits: a Wait that finds the barrier up is
// told once as a wait of Recipe "barrier", goes on through a cut, and ends
// when the barrier goes down or its context ends; a Wait on a barrier
// that is down is not told.
func TestObserverHearsABarriersWaits(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, time.Minute)
	path := root + "/b"
	b, setter := newBarrier(t, c, path), newBarrier(t, open(t, ens.Servers()), path)
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := setter.Set(ctx); err != nil {
		t.Fatal(err)
	}
	done := waitFor(func() error { return b.Wait(ctx) })
	waitsTold(t, rec, 1)
	p.Cut()
	p.Restore()
	if err := setter.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if err := within(t, done, 20*time.Second, "Wait"); err != nil {
		t.Fatal(err)
	}
	if err := setter.Set(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := b.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a short context = %v", err)
	}

	waits := rec.Waits()
	testkit.OnceEnded(t, "wait", waits)
	if len(waits) != 2 {
		t.Fatalf("waits %+v, want 2", waits)
	}
	for i, w := range waits {
		if w.Begin != (connection.Wait{Recipe: "barrier", Path: path}) {
			t.Errorf("wait %d began %+v, want the barrier's at %s", i, w.Begin, path)
		}
	}
	if err := waits[0].Ends[0].Err; err != nil {
		t.Errorf("first wait ended with %v, want the barrier down", err)
	}
	if err := waits[1].Ends[0].Err; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second wait ended with %v, want its context's deadline", err)
	}
}

// TestObserverHearsADoubleBarriersWaits: a member's Enter and Leave that
// wait are told as waits of Recipe "doublebarrier" with its node and the
// members it waits for, ended when they pass; a WaitLeft that finds no
// member is not told.
func TestObserverHearsADoubleBarriersWaits(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	dir := ens.Root(t) + "/d"
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, time.Minute)
	d, other := newDouble(t, c, dir, 2), newDouble(t, open(t, ens.Servers()), dir, 2)
	entered := waitFor(func() error { return d.Enter(ctx) })
	waitsTold(t, rec, 1)
	if err := other.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	if err := within(t, entered, 20*time.Second, "Enter"); err != nil {
		t.Fatal(err)
	}
	node := d.Node()
	left := waitFor(func() error { return d.Leave(ctx) })
	waitsTold(t, rec, 2)
	if err := other.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := within(t, left, 20*time.Second, "Leave"); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitLeft(ctx); err != nil {
		t.Fatal(err)
	}

	waits := rec.Waits()
	testkit.OnceEnded(t, "wait", waits)
	want := connection.Wait{Recipe: "doublebarrier", Path: dir, Participant: node, Ahead: 1}
	if len(waits) != 2 || waits[0].Begin != want || waits[1].Begin != want || waits[0].Ends[0].Err != nil || waits[1].Ends[0].Err != nil {
		t.Errorf("waits %+v, want Enter's and Leave's, each %+v, ended when they passed", waits, want)
	}
}
