package semaphore_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
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
