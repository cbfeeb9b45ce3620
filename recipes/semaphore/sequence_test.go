package semaphore_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/seqserver"
)

// TestSequenceExhausted: lease nodes are counted, not ordered, so leases
// numbered at the limit are granted as any; the acquirers' mutex
// (<path>/locks) is ordered, and at its limit Acquire fails with
// connection.ErrSequenceExhausted.
func TestSequenceExhausted(t *testing.T) {
	s := seqserver.Start(t)
	c := open(t, s.Servers())
	ctx := ctxFor(t, time.Minute)
	for _, dir := range []string{"/sem/leases", "/sem/locks"} {
		if err := c.EnsurePath(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	s.SetCounter(t, "/sem/leases", math.MaxInt32)
	sem := newSem(t, c, "/sem", 2)
	leases, err := sem.Acquire(ctx, 2)
	if err != nil {
		t.Fatalf("leases numbered at the limit: %v", err)
	}
	if leases[0].Node() == leases[1].Node() {
		t.Fatal("one node for two leases")
	}
	for _, l := range leases {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	s.SetCounter(t, "/sem/locks", math.MaxInt32)
	if _, err := sem.Acquire(ctx, 1); !errors.Is(err, connection.ErrSequenceExhausted) {
		t.Fatalf("acquire with the mutex at the limit: %v, want ErrSequenceExhausted", err)
	}
	for _, dir := range []string{"/sem/leases", "/sem/locks"} {
		if names, _, err := c.Children(ctx, dir); err != nil || len(names) != 0 {
			t.Fatalf("%s: children %q, %v; want none", dir, names, err)
		}
	}
}
