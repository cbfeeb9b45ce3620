package rwlock_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/seqserver"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// TestSequenceExhausted: both sides of a lock whose directory's counter
// is at its limit fail with connection.ErrSequenceExhausted and leave no
// node; a reader below the limit still holds.
func TestSequenceExhausted(t *testing.T) {
	s := seqserver.Start(t)
	c := open(t, s.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, "/rw", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	s.SetCounter(t, "/rw", math.MaxInt32-1)
	reader := newRW(t, c, "/rw").ReadLock()
	if err := reader.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"read", "write"} {
		rw := newRW(t, c, "/rw")
		s := rw.ReadLock()
		if side == "write" {
			s = rw.WriteLock()
		}
		if err := s.Lock(ctx); !errors.Is(err, connection.ErrSequenceExhausted) || s.Held() {
			t.Fatalf("%s side at the limit: %v, held %v; want ErrSequenceExhausted", side, err, s.Held())
		}
	}
	if names, _, err := c.Children(ctx, "/rw"); err != nil || len(names) != 1 {
		t.Fatalf("children %q, %v; want the reader's node only", names, err)
	}
	if testkit.Closed(reader.Done()) {
		t.Fatal("the reader below the limit lost its hold")
	}
}
