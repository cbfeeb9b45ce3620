package partition_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// TestObserverHearsEachItemOfAShareAsAHold: every item of a share is told
// as a hold of Recipe "partition" with its lock node and token; a cut ends
// each once, as suspended, and the partitioner's Close releases the next
// share's.
func TestObserverHearsEachItemOfAShareAsAHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/work"
	px := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, px.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, time.Minute)
	p, err := partition.New(c, dir, itemsN(3), partition.WithIdentifier("m1"), partition.WithTimeBoundary(boundary))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(ctxFor(t, 10*time.Second)) })
	first, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	px.Cut()
	<-first.Done()
	px.Restore()
	if err := first.Release(ctx); !errors.Is(err, partition.ErrItemLost) {
		t.Fatalf("Release of a share cut off = %v, want ErrItemLost", err)
	}
	second, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}

	holds := rec.HoldsOf("partition")
	testkit.OnceEnded(t, "item", holds)
	items := append(first.Items(), second.Items()...)
	if len(holds) != len(items) || len(items) != 6 {
		t.Fatalf("partition holds %+v, want one per item of the two shares (%d)", holds, len(items))
	}
	for i, it := range items {
		h := holds[i]
		if h.Begin.Path != dir || h.Begin.Participant != it.Node || h.Begin.Token != it.Token || h.Begin.SessionID == 0 {
			t.Errorf("hold %d began %+v, want item %s's lock node %s with token %d", i, h.Begin, it.Name, it.Node, it.Token)
		}
		cause := h.Ends[0].Cause
		switch {
		case i < 3 && (!errors.Is(cause, connection.ErrSuspended) || cause.Error() != it.Err().Error()):
			t.Errorf("item %s of the first share ended with %v, want its own cause %v (suspended)", it.Name, cause, it.Err())
		case i >= 3 && cause != nil:
			t.Errorf("item %s of the second share ended with %v, want released", it.Name, cause)
		}
	}
}
