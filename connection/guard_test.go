package connection

import (
	"context"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

func TestGuardedResponsesInCallersOrder(t *testing.T) {
	g := newGuard("/g", newSession(1, 0, 0), func() error { return nil })
	ops := []any{&zk.SetDataRequest{Path: "/a"}, g, &zk.DeleteRequest{Path: "/b"}, g}
	gs, rest := splitGuards(ops)
	if len(gs.guards) != 2 || len(rest) != 2 || gs.at[0] != 1 || gs.at[1] != 3 {
		t.Fatalf("split: %d guards at %v, %d ops", len(gs.guards), gs.at, len(rest))
	}
	if opIndex(gs, 0) != 0 || opIndex(gs, 1) != 2 {
		t.Fatalf("op places %d, %d; want 0, 2", opIndex(gs, 0), opIndex(gs, 1))
	}
	wire := []zk.MultiResponse{{String: "g1"}, {String: "g2"}, {String: "a"}, {String: "b"}}
	got := gs.order(wire)
	want := []string{"a", "g1", "b", "g2"}
	for i := range want {
		if got[i].String != want[i] {
			t.Fatalf("responses in the caller's order: %v, want %v", got, want)
		}
	}
}

func TestGuardFailureNamesTheHold(t *testing.T) {
	lost := errors.New("mutex: lock lost")
	var over error
	g := newGuard("/locks/x/n", newSession(1, 0, 0), func() error { return over })
	gs, _ := splitGuards([]any{g})
	if err := gs.failure([]zk.MultiResponse{{Error: nil}, {Error: zk.ErrNoNode}}); err != nil {
		t.Fatalf("another op's failure taken for the guard's: %v", err)
	}
	err := gs.failure([]zk.MultiResponse{{Error: zk.ErrNoNode}, {Error: zk.ErrAPIError}})
	if !errors.Is(err, ErrGuardFailed) || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("guard's NoNode: %v, want ErrGuardFailed and zk.ErrNoNode", err)
	}
	over = lost
	err = gs.failure([]zk.MultiResponse{{Error: zk.ErrBadVersion}})
	if !errors.Is(err, ErrGuardFailed) || !errors.Is(err, lost) {
		t.Fatalf("guard written after its hold ended: %v, want ErrGuardFailed and the hold's cause", err)
	}
	t.Log(err)
	if _, err := gs.check(context.Background(), nil); !errors.Is(err, ErrGuardFailed) || !errors.Is(err, lost) {
		t.Fatalf("check of a guard whose hold is over: %v", err)
	}
	var none *Guard
	gs, _ = splitGuards([]any{none})
	if _, err := gs.check(context.Background(), nil); !errors.Is(err, ErrGuardFailed) {
		t.Fatalf("check of a nil guard: %v", err)
	}
}
