package naive_test

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

// TestObserverHearsWaitsAndHoldsOfTheNaiveLock: a waiter's wait is told
// once with the holder ahead of it and no node of its own, and ends when
// its turn comes or its context ends; its hold is told, and a cut ends it
// once, as suspended.
func TestObserverHearsWaitsAndHoldsOfTheNaiveLock(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := root + "/l"
	holder, waiter := newLock(t, open(t, ens.Servers()), path), newLock(t, c, path)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	// A wait its context ends.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if err := waiter.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with a short context = %v", err)
	}
	// A wait whose turn comes.
	locked := make(chan error, 1)
	go func() { locked <- waiter.Lock(ctx) }()
	zktest.Eventually(t, 10*time.Second, "the second wait told", func() error {
		if n := len(rec.Waits()); n != 2 {
			return fmt.Errorf("%d waits", n)
		}
		return nil
	})
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	token := waiter.Token()
	p.Cut()
	<-waiter.Done()
	p.Restore()

	waits := rec.Waits()
	testkit.OnceEnded(t, "wait", waits)
	if len(waits) != 2 {
		t.Fatalf("waits %+v, want 2", waits)
	}
	for i, w := range waits {
		if w.Begin != (connection.Wait{Recipe: "naive", Path: path, Ahead: 1}) {
			t.Errorf("wait %d began %+v, want the naive lock's at %s, the holder ahead", i, w.Begin, path)
		}
	}
	if err := waits[0].Ends[0].Err; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("first wait ended with %v, want its context's deadline", err)
	}
	if err := waits[1].Ends[0].Err; err != nil {
		t.Errorf("second wait ended with %v, want its turn", err)
	}
	if waits[1].CtxVal != nil {
		t.Errorf("wait began under %v, want the caller's context", waits[1].CtxVal)
	}
	var underWait int
	for _, r := range rec.Requests() {
		if r.CtxVal == testkit.WaitCtxVal && r.Begin.Path == path {
			underWait++
		}
	}
	if underWait == 0 {
		t.Error("no request on the lock's node made with the wait's context")
	}
	holds := rec.Holds()
	testkit.OnceEnded(t, "hold", holds)
	if len(holds) != 1 {
		t.Fatalf("holds %+v, want the waiter's one", holds)
	}
	h := holds[0]
	if h.Begin.Recipe != "naive" || h.Begin.Path != path || h.Begin.Participant != path || h.Begin.Token != token || h.Begin.SessionID == 0 {
		t.Errorf("hold %+v, want the naive lock's at %s with token %d", h.Begin, path, token)
	}
	if cause := h.Ends[0].Cause; !errors.Is(cause, connection.ErrSuspended) || cause.Error() != waiter.Err().Error() {
		t.Errorf("hold ended with %v, want the hold's own cause %v (suspended)", cause, waiter.Err())
	}
}
