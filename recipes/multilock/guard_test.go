package multilock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
)

// TestGuards: a transaction with a Multi's guards commits while every lock
// holds, and not once one lock's node is gone, nor when the Multi does not
// hold; locks of two clients cannot fence one transaction.
func TestGuards(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set := guardtest.StateNode(t, ctx, c, root+"/state")
	nl, err := naive.New(c, root+"/n")
	if err != nil {
		t.Fatal(err)
	}
	a := mu(t, c, root+"/a")
	m, err := multilock.New(a, nl)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Multi(ctx, append(m.Guards(), set("not held"))...)
	if !errors.Is(err, connection.ErrGuardFailed) || !errors.Is(err, multilock.ErrNotLocked) {
		t.Fatalf("guards of a Multi that does not hold: %v, want ErrGuardFailed and ErrNotLocked", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	guards := m.Guards()
	if len(guards) != 2 {
		t.Fatalf("%d guards of two locks", len(guards))
	}
	if _, err := c.Multi(ctx, append(guards, set("held"))...); err != nil {
		t.Fatalf("guards of a Multi that holds: %v", err)
	}
	if err := ens.Conn(t).Delete(connx.Of(c).ServerPath(a.Node()), -1); err != nil {
		t.Fatal(err)
	}
	_, err = c.Multi(ctx, append(guards, set("a's node gone"))...)
	if !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("guards once a lock's node is gone: %v, want ErrGuardFailed", err)
	}
	_ = m.Unlock(ctx) // a lock was lost: says so

	other := open(t, ens.Servers())
	m2, err := multilock.New(mu(t, c, root+"/c"), mu(t, other, root+"/d"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m2.Unlock(ctx)
	if _, err := c.Multi(ctx, append(m2.Guards(), set("two clients"))...); !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("guards of locks of two clients: %v, want ErrInvalidOption", err)
	}
	data, _, err := c.Get(ctx, root+"/state")
	if err != nil || string(data) != "held" {
		t.Fatalf("state %q, %v: want only the write made while every lock held", data, err)
	}
}
