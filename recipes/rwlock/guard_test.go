package rwlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

// TestGuardOfReadSide: readers' guards commit side by side; a reader's
// guard fails once it unlocks.
func TestGuardOfReadSide(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	set := guardtest.StateNode(t, ctx, c, root+"/state")
	r1, r2 := newRW(t, c, root+"/rw").ReadLock(), newRW(t, c, root+"/rw").ReadLock()
	for _, r := range []*rwlock.Side{r1, r2} {
		if err := r.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Multi(ctx, r1.Guard(), r2.Guard(), set("both")); err != nil {
		t.Fatalf("two readers' guards: %v", err)
	}
	g := r1.Guard()
	if err := r1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Multi(ctx, g, set("r1 released")); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("a released reader's guard: %v, want ErrGuardFailed", err)
	}
	if err := r2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
