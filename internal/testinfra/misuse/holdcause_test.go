package misuse_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// holdLike is what every hold has: the end of the hold, and why.
type holdLike interface {
	Done() <-chan struct{}
	Context() context.Context
	Err() error
}

// heldOne is one hold of every kind, with its release and the sentinels
// its Err matches after that release and after a loss.
type heldOne struct {
	hold     holdLike
	release  func(ctx context.Context) error
	released error // Err after release
	lost     error // the recipe's lost sentinel
}

// holdEveryKind takes one hold of each kind through c under root: the
// lock recipes, a semaphore lease, an election term and a taken item.
func holdEveryKind(t *testing.T, c *connection.Client, root string) map[string]heldOne {
	t.Helper()
	ctx := testkit.Ctx(t, 30*time.Second)
	out := map[string]heldOne{}
	released := map[string]error{
		"mutex": mutex.ErrUnlocked, "naive": naive.ErrUnlocked, "rwlock read": rwlock.ErrUnlocked,
		"rwlock write": rwlock.ErrUnlocked, "semaphore mutex": semaphore.ErrReleased, "multilock": multilock.ErrUnlocked,
	}
	lost := map[string]error{
		"mutex": mutex.ErrLockLost, "naive": naive.ErrLockLost, "rwlock read": rwlock.ErrLockLost,
		"rwlock write": rwlock.ErrLockLost, "semaphore mutex": semaphore.ErrLeaseLost, "multilock": multilock.ErrLost,
	}
	ls := locks(t, c, root)
	must(t, ls["rwlock write"].Lock(ctx)) // then the read lock: a downgrade
	for name, l := range ls {
		if name != "rwlock write" {
			must(t, l.Lock(ctx))
		}
		out[name] = heldOne{l.(holdLike), l.Unlock, released[name], lost[name]}
	}
	s, err := semaphore.New(c, root+"/sem-leases", 2)
	must(t, err)
	leases, err := s.Acquire(ctx, 1)
	must(t, err)
	out["semaphore lease"] = heldOne{leases[0], leases[0].Release, semaphore.ErrReleased, semaphore.ErrLeaseLost}
	e, err := election.New(c, root+"/e", "me")
	must(t, err)
	term, err := e.Campaign(ctx)
	must(t, err)
	out["election term"] = heldOne{term, term.Resign, election.ErrResigned, election.ErrTermLost}
	q, err := queue.New(c, root+"/q")
	must(t, err)
	must(t, q.Put(ctx, []byte("x")))
	it, err := q.TryTake(ctx)
	must(t, err)
	out["queue item"] = heldOne{it, it.Consume, queue.ErrFinished, queue.ErrItemLost}
	return out
}

// TestEveryHoldSaysWhyItEnded: every kind of hold has Err, nil while it
// lasts and then the cause of its Context; released by its owner it says
// its recipe's released sentinel, and ended by a suspension under the
// standard policy — the server still holding the session, which comes
// back the same — it says its
// recipe's lost sentinel and connection.ErrSuspended, never
// connection.ErrSessionLost.
func TestEveryHoldSaysWhyItEnded(t *testing.T) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	ctx := testkit.Ctx(t, time.Minute)
	check := func(name, when string, h holdLike, ctxCause error, want []error, not ...error) {
		t.Helper()
		err := h.Err()
		if err != ctxCause || err != context.Cause(h.Context()) {
			t.Errorf("%s %s: Err %v, the hold's Context's cause %v, Context() now %v: want one error", name, when, err, ctxCause, context.Cause(h.Context()))
		}
		for _, w := range want {
			if !errors.Is(err, w) {
				t.Errorf("%s %s: Err = %v, want it to match %v", name, when, err, w)
			}
		}
		for _, n := range not {
			if errors.Is(err, n) {
				t.Errorf("%s %s: Err = %v, want it not to match %v", name, when, err, n)
			}
		}
	}

	c := testkit.Open(t, ens.Servers())
	for name, h := range holdEveryKind(t, c, root+"/released") {
		hctx := h.hold.Context()
		if err := h.hold.Err(); err != nil || hctx.Err() != nil {
			t.Errorf("%s while held: Err %v, Context %v; want nil", name, err, hctx.Err())
		}
		if err := h.release(ctx); err != nil {
			t.Errorf("%s: release: %v", name, err)
			continue
		}
		check(name, "after its release", h.hold, context.Cause(hctx), []error{h.released}, h.lost, connection.ErrSuspended, connection.ErrSessionLost)
	}

	p := ens.Proxy(t)
	cp := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	holds := holdEveryKind(t, cp, root+"/suspended")
	ctxs := map[string]context.Context{}
	for name, h := range holds {
		ctxs[name] = h.hold.Context()
	}
	sess := cp.Session()
	p.Blackhole()
	for name, h := range holds {
		select {
		case <-h.hold.Done():
		case <-ctx.Done():
			t.Fatalf("%s: Done still open after the cut", name)
		}
	}
	if !testkit.ServerHasSession(t, ens, sess.ID()) || sess.Err() != nil {
		t.Fatalf("session %#x: the server no longer holds it, or it ended (%v): this test needs it alive", sess.ID(), sess.Err())
	}
	for name, h := range holds {
		want := []error{h.lost, connection.ErrSuspended}
		if name == "multilock" {
			want = append(want, mutex.ErrLockLost) // the lost lock's own cause
		}
		check(name, "after a suspension", h.hold, context.Cause(ctxs[name]), want, connection.ErrSessionLost, h.released)
	}
	states := cp.Listen(ctx)
	p.Restore()
	testkit.WaitState(t, states, connection.Reconnected, 15*time.Second)
	if cp.Session() != sess {
		t.Fatal("the session changed: this test needs it to live")
	}
	for name, h := range holds {
		if err := h.release(ctx); !errors.Is(err, connection.ErrSuspended) || errors.Is(err, connection.ErrSessionLost) {
			t.Errorf("%s: release after a suspension = %v, want ErrSuspended and not ErrSessionLost", name, err)
		}
	}
}
