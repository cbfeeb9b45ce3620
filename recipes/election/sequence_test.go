package election_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/seqserver"
)

// TestSequenceExhausted: a candidate whose node is numbered at the limit
// fails with connection.ErrSequenceExhausted and leaves no node; the
// leader below the limit keeps leading.
func TestSequenceExhausted(t *testing.T) {
	s := seqserver.Start(t)
	c := open(t, s.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, "/election", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	s.SetCounter(t, "/election", math.MaxInt32-1)
	leader, err := newElection(t, c, "/election", "a").Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newElection(t, c, "/election", "b").Campaign(ctx); !errors.Is(err, connection.ErrSequenceExhausted) {
		t.Fatalf("candidate at the limit: %v, want ErrSequenceExhausted", err)
	}
	if names, _, err := c.Children(ctx, "/election"); err != nil || len(names) != 1 {
		t.Fatalf("children %q, %v; want the leader's node only", names, err)
	}
	if closed(leader.Done()) {
		t.Fatal("the leader below the limit lost its term")
	}
}
