package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// TestPartyTrustedBeforeListen: the party's view is trusted before the
// worker listens to it (as happens when the worker is descheduled between
// joining and listening): the listener's first event, a Resync, is all
// it hears of that trust, and the member still acquires its share rather
// than hanging in ALLOCATING (the view can also turn trusted between that
// check and the listener's start). The order is rare on its own — a few
// partitioners in a thousand on a loaded machine — so the test makes it.
func TestPartyTrustedBeforeListen(t *testing.T) {
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	partition.SetJoinedHook(func(g *group.Group) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := g.Cache().Trust(ctx); err != nil {
			t.Errorf("the party's view: %v", err)
		}
	})
	defer partition.SetJoinedHook(nil)
	p, err := partition.New(c, ens.Root(t)+"/p", []string{"a", "b"}, partition.WithTimeBoundary(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctxFor(t, 10*time.Second))
	s, err := p.Acquire(ctxFor(t, 10*time.Second))
	if err != nil {
		st, _ := p.State()
		t.Fatalf("state %v: %v", st, err)
	}
	if got := s.Names(); len(got) != 2 {
		t.Fatalf("a lone member holds %v", got)
	}
}
