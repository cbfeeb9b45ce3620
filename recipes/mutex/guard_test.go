package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestGuard(t *testing.T) {
	guardtest.Run(t, shared, guardtest.Kind{
		Take: func(ctx context.Context, t *testing.T, c *connection.Client, path string) (guardtest.Hold, func(context.Context) error) {
			m := newMutex(t, c, path)
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			return m, m.Unlock
		},
		Lost: mutex.ErrLockLost,
	})
}

// TestGuardOfReentrantHold: a reentrant Lock keeps the hold, and its
// guard; the guard commits until the last Unlock, and not after, nor once
// the lock is taken again (a new hold). A Mutex that holds nothing gives
// a guard that fails with ErrNotLocked.
func TestGuardOfReentrantHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/state", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	set := func(v string) *zk.SetDataRequest {
		return &zk.SetDataRequest{Path: root + "/state", Data: []byte(v), Version: -1}
	}
	m := newMutex(t, c, root+"/lock")
	_, err := c.Multi(ctx, m.Guard(), set("not held"))
	if !errors.Is(err, connection.ErrGuardFailed) || !errors.Is(err, mutex.ErrNotLocked) {
		t.Fatalf("guard of a Mutex that holds nothing: %v, want ErrGuardFailed and ErrNotLocked", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	g := m.Guard()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Guard().Path() != g.Path() {
		t.Fatal("a reentrant Lock changed the guard's node")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Multi(ctx, g, set("held once")); err != nil {
		t.Fatalf("guard after one of two Unlocks: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Multi(ctx, g, set("released")); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("guard after the last Unlock: %v, want ErrGuardFailed", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	if _, err := c.Multi(ctx, g, set("the next hold")); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("the first hold's guard during the next hold: %v, want ErrGuardFailed", err)
	}
	data, _, err := c.Get(ctx, root+"/state")
	if err != nil || string(data) != "held once" {
		t.Fatalf("state %q, %v: want the write made while held", data, err)
	}
}

// TestGuardAfterRevocationRequest: a revocation request writes to the
// holder's node (its version changes); the guard, which does not compare
// versions, still commits while the hold lasts.
func TestGuardAfterRevocationRequest(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/state", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, c, root+"/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	if err := mutex.Revoke(ctx, open(t, ens.Servers()), m.Node()); err != nil {
		t.Fatal(err)
	}
	if _, st, err := c.Get(ctx, m.Node()); err != nil || st.Version == 0 {
		t.Fatalf("the holder's node after a revocation request: %+v, %v; want a new version", st, err)
	}
	if _, err := c.Multi(ctx, m.Guard(), &zk.SetDataRequest{Path: root + "/state", Data: []byte("x"), Version: -1}); err != nil {
		t.Fatalf("guard of a hold asked to let go: %v", err)
	}
}
