package shared_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/retry"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// lead makes a new candidate on c of the election at path lead, and
// returns its term.
func lead(t *testing.T, ctx context.Context, c *connection.Client, path, id string) *election.Term {
	t.Helper()
	e, err := election.New(c, path, id)
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatalf("campaign of %s: %v", id, err)
	}
	return term
}

// observed reads the node at p as the server has it, through a client of
// the test's own: its data, nil while it does not exist.
func observed(t *testing.T, obs *zk.Conn, p string) []byte {
	t.Helper()
	if _, err := obs.Sync(p); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	data, _, err := obs.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func int64Data(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// TestGuardedWritesCommitOnlyWhileLeading: every write of a Counter, a
// Value and a Count commits under a leader's guard while it leads; once
// the term is over, each is refused (ErrGuardFailed), and the server's
// view, read by another client, holds only the leader's writes.
func TestGuardedWritesCommitOnlyWhileLeading(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	term := lead(t, ctx, c, root+"/leader", "a")
	g := shared.WithGuard(term.Guard())

	cn := newCounter(t, c, root+"/counter")
	if ok, err := cn.Initialize(ctx, 5, g); err != nil || !ok {
		t.Fatalf("guarded Initialize = %v, %v", ok, err)
	}
	if res, err := cn.Add(ctx, 2, g); err != nil || !res.Succeeded || res.Post != 7 {
		t.Fatalf("guarded Add = %+v, %v", res, err)
	}
	if res, err := cn.Increment(ctx, g); err != nil || res.Post != 8 {
		t.Fatalf("guarded Increment = %+v, %v", res, err)
	}
	if res, err := cn.CompareAndSet(ctx, 8, 20, g); err != nil || !res.Succeeded {
		t.Fatalf("guarded CompareAndSet = %+v, %v", res, err)
	}
	if err := cn.Set(ctx, 30, g); err != nil {
		t.Fatalf("guarded Set of the counter: %v", err)
	}

	v, err := shared.NewValue(c, root+"/dir/value", []byte("seed"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := v.Initialize(ctx, g); err != nil || !ok {
		t.Fatalf("guarded Initialize of a value whose parent is missing = %v, %v", ok, err)
	}
	cur, err := v.Set(ctx, []byte("one"), g)
	if err != nil || cur.Version != 1 {
		t.Fatalf("guarded Set = %+v, %v", cur, err)
	}
	if cur, err = v.TrySet(ctx, cur, []byte("two"), g); err != nil || cur.Version != 2 {
		t.Fatalf("guarded TrySet = %+v, %v", cur, err)
	}
	if _, err := v.TrySet(ctx, shared.Versioned[[]byte]{Version: 1}, []byte("stale"), g); !errors.Is(err, shared.ErrChanged) || errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("guarded TrySet over an old version: %v, want ErrChanged", err)
	}
	count, err := shared.NewCount(c, root+"/count", 0)
	if err != nil {
		t.Fatal(err)
	}
	absent, err := count.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := count.TrySet(ctx, absent, 3, g); err != nil {
		t.Fatalf("guarded TrySet creating a count: %v", err)
	}
	if _, err := count.Set(ctx, 4, g); err != nil {
		t.Fatalf("guarded Set of a count: %v", err)
	}

	// Misuse: the guard of no hold, a nil option.
	if _, err := cn.Add(ctx, 1, shared.WithGuard(nil)); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("Add with the guard of no hold: %v, want ErrGuardFailed", err)
	}
	if _, err := v.Set(ctx, []byte("x"), nil); !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("Set with a nil option: %v, want ErrInvalidOption", err)
	}

	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = cn.Add(ctx, 1, g)
	wantGuardFailed(t, "Add after the term", err)
	_, err = cn.Increment(ctx, g)
	wantGuardFailed(t, "Increment after the term", err)
	_, err = cn.CompareAndSet(ctx, 30, 0, g)
	wantGuardFailed(t, "CompareAndSet after the term", err)
	wantGuardFailed(t, "counter Set after the term", cn.Set(ctx, 0, g))
	_, err = v.Set(ctx, []byte("late"), g)
	wantGuardFailed(t, "Set after the term", err)
	_, err = v.TrySet(ctx, cur, []byte("late"), g)
	wantGuardFailed(t, "TrySet after the term", err)
	_, err = count.Set(ctx, 9, g)
	wantGuardFailed(t, "count Set after the term", err)
	other, err := shared.NewValue(c, root+"/other", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Initialize(ctx, g)
	wantGuardFailed(t, "Initialize after the term", err)

	if got := observed(t, obs, root+"/counter"); !bytes.Equal(got, int64Data(30)) {
		t.Fatalf("counter %x, want 30: only the leader's writes", got)
	}
	if got := observed(t, obs, root+"/dir/value"); string(got) != "two" {
		t.Fatalf("value %q, want \"two\"", got)
	}
	if got := observed(t, obs, root+"/count"); !bytes.Equal(got, []byte{0, 0, 0, 4}) {
		t.Fatalf("count %x, want 4", got)
	}
	if got := observed(t, obs, root+"/other"); got != nil {
		t.Fatalf("a refused Initialize made the node: %q", got)
	}
}

// TestGuardedAddByCutOffLeaderNeverCommits: leader A adds under its
// term's guard; the network cuts A off from the ensemble just before its
// next add is sent, for longer than its session timeout; the server
// expires A's session and B, on another client, is elected and adds under
// its own term. A's add sent into the cut never commits, and A's adds
// after the network healed are refused: the server's view holds A's first
// add and B's only.
func TestGuardedAddByCutOffLeaderNeverCommits(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	a := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	b := open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, 2*time.Minute)
	counter := root + "/counter"

	ta := lead(t, ctx, a, root+"/leader", "a")
	aSess := ta.Guard().Session()
	ca := newCounter(t, a, counter)
	if res, err := ca.Add(ctx, 1, shared.WithGuard(ta.Guard())); err != nil || res.Post != 1 {
		t.Fatalf("A's first guarded add = %+v, %v", res, err)
	}
	var once sync.Once
	shared.BeforeWrite(ca, func() { once.Do(p.Blackhole) })
	during := make(chan error, 1)
	go func() {
		res, err := ca.Add(ctx, 10, shared.WithGuard(ta.Guard()))
		if err == nil {
			err = errors.New("answered as applied")
			if !res.Succeeded {
				err = errors.New("answered as not applied, with no error")
			}
		}
		during <- err
	}()
	tb := lead(t, ctx, b, root+"/leader", "b") // once the server expired A's session
	if got := observed(t, obs, counter); !bytes.Equal(got, int64Data(1)) {
		t.Fatalf("counter %x when B is elected, want 1: A's add sent into the cut committed", got)
	}
	p.Restore()
	zktest.Eventually(t, 30*time.Second, "A's client has a new session", func() error {
		s, err := a.WaitSession(ctx)
		if err == nil && s == aSess {
			err = errors.New("still the old session")
		}
		return err
	})
	err := <-during
	if !errors.Is(err, connection.ErrGuardFailed) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Fatalf("A's add sent into the cut: %v, want ErrGuardFailed or ErrOutcomeUnknown", err)
	}
	t.Logf("A's add sent into the cut: %v", err)
	_, err = ca.Add(ctx, 100, shared.WithGuard(ta.Guard()))
	wantGuardFailed(t, "A's add after the network healed", err)

	cb := newCounter(t, b, counter)
	if res, err := cb.Add(ctx, 1000, shared.WithGuard(tb.Guard())); err != nil || res.Pre != 1 || res.Post != 1001 {
		t.Fatalf("B's guarded add = %+v, %v; want 1 + 1000", res, err)
	}
	// Whatever A's old connection held has had its chance: A's new
	// session has been answered since.
	if err := a.Sync(ctx, counter); err != nil {
		t.Fatal(err)
	}
	if got := observed(t, obs, counter); !bytes.Equal(got, int64Data(1001)) {
		t.Fatalf("counter %x, want 1001: A's first add and B's only", got)
	}
	if err := tb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGuardedWriteAfterHoldNodeDeleted: another client deletes the node
// of the hold; a guarded write sent by a holder that has not heard of it
// yet (a guard whose hold never ends on its own, so that only the server
// can refuse) fails with ErrGuardFailed, and nothing is applied: not the
// counter, not the marker (the next add is exact), not a value.
func TestGuardedWriteAfterHoldNodeDeleted(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	claim, _, err := connx.Of(c).Claim(ctx, root+"/hold", []byte(connx.NewUUID()))
	if err != nil {
		t.Fatal(err)
	}
	g := shared.WithGuard(connx.NewGuard(claim.Path, claim.Session, func() error { return nil }))
	cn := newCounter(t, c, root+"/counter", shared.WithEncoding(shared.Int32))
	if _, err := cn.Add(ctx, 1, g); err != nil {
		t.Fatal(err)
	}
	v, err := shared.NewValue(c, root+"/value", nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := v.Set(ctx, []byte("held"), g)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(claim.Path, -1); err != nil {
		t.Fatal(err)
	}
	res, err := cn.Add(ctx, 10, g)
	wantGuardFailed(t, "guarded add after the hold's node was deleted", err)
	if !errors.Is(err, zk.ErrNoNode) || res.Succeeded || res.OptimisticTries != 1 {
		t.Fatalf("guarded add = %+v, %v: want the server's NoNode, one try, not succeeded", res, err)
	}
	_, err = v.Set(ctx, []byte("gone"), g)
	wantGuardFailed(t, "guarded Set after the hold's node was deleted", err)
	_, err = v.TrySet(ctx, cur, []byte("gone"), g)
	wantGuardFailed(t, "guarded TrySet after the hold's node was deleted", err)
	if got := observed(t, obs, root+"/counter"); !bytes.Equal(got, []byte{0, 0, 0, 1}) {
		t.Fatalf("counter %x, want 1", got)
	}
	if got := observed(t, obs, root+"/value"); string(got) != "held" {
		t.Fatalf("value %q, want \"held\"", got)
	}
	// The marker was not moved either: an unguarded add is exact.
	if res, err := cn.Add(ctx, 100); err != nil || res.Pre != 1 || res.Post != 101 || res.OptimisticTries != 1 {
		t.Fatalf("add after the refused one = %+v, %v", res, err)
	}
}

// TestGuardedAddLostAnswerCountedOnce: a guarded add reaches the server
// and applies while the leader leads; its answer is lost. Once connected
// again in the same session, the marker settles it: Succeeded, counted
// once, tried once — though the term may have ended meanwhile (the
// connection was suspended): it applied while it lasted.
func TestGuardedAddLostAnswerCountedOnce(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	conn := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	term := lead(t, ctx, c, root+"/leader", "a")
	p := root + "/c"
	cn := newCounter(t, c, p, shared.WithEncoding(shared.Text))
	g := shared.WithGuard(term.Guard())
	sess := addedThenDropped(t, ctx, c, cn, proxy, g)
	done := addAsync(ctx, cn, 10, g)
	waitData(t, conn, p, []byte("11"))
	proxy.Restore()
	r := <-done
	if r.err != nil || !r.res.Succeeded || r.res.Pre != 1 || r.res.Post != 11 || r.res.OptimisticTries != 1 {
		t.Fatalf("guarded Add after a lost answer = %+v, %v; want succeeded once", r.res, r.err)
	}
	if c.Session() != sess {
		t.Fatal("the session changed: the test did not exercise the same-session case")
	}
	if notApplied, applied := shared.Settled(cn); notApplied != 0 || applied != 1 {
		t.Fatalf("settled %d not applied, %d applied; want the lost answer settled as applied", notApplied, applied)
	}
	if got := observed(t, conn, p); string(got) != "11" {
		t.Fatalf("counter %q, want 11: the add counted once", got)
	}
}

// TestGuardOfAnotherClientRefused: a guard of a hold of client B, given
// to writes of client A, is refused (ErrGuardFailed): one transaction
// runs in one session, the hold's. Nothing is written.
func TestGuardOfAnotherClientRefused(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	a, b := open(t, ens.Servers()), open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	tb := lead(t, ctx, b, root+"/leader", "b")
	g := shared.WithGuard(tb.Guard())
	cn := newCounter(t, a, root+"/counter")
	if _, err := cn.Initialize(ctx, 1); err != nil {
		t.Fatal(err)
	}
	res, err := cn.Add(ctx, 1, g)
	wantGuardFailed(t, "add guarded by another client's hold", err)
	if res.Succeeded {
		t.Fatalf("result %+v", res)
	}
	v, err := shared.NewValue(a, root+"/value", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Set(ctx, []byte("a"), g)
	wantGuardFailed(t, "Set guarded by another client's hold", err)
	_, err = v.TrySet(ctx, shared.Versioned[[]byte]{Version: -1}, []byte("a"), g)
	wantGuardFailed(t, "TrySet guarded by another client's hold", err)
	if got := observed(t, obs, root+"/counter"); !bytes.Equal(got, int64Data(1)) {
		t.Fatalf("counter %x, want 1", got)
	}
	if got := observed(t, obs, root+"/value"); got != nil {
		t.Fatalf("value %q written", got)
	}
	if err := tb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGuardedAddsOfParticipantsOnOneClient: two candidates of one
// election on one client, each with a Counter of its own on one counter.
// The leader's guarded adds commit; once it resigns and the other leads,
// the first's guard refuses though the session is the same, and the new
// leader's commits.
func TestGuardedAddsOfParticipantsOnOneClient(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	t1 := lead(t, ctx, c, root+"/leader", "one")
	c1, c2 := newCounter(t, c, root+"/counter"), newCounter(t, c, root+"/counter")
	if _, err := c1.Add(ctx, 1, shared.WithGuard(t1.Guard())); err != nil {
		t.Fatal(err)
	}
	second := make(chan *election.Term, 1)
	go func() {
		e, err := election.New(c, root+"/leader", "two")
		if err != nil {
			second <- nil
			return
		}
		term, _ := e.Campaign(ctx)
		second <- term
	}()
	if err := t1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	t2 := <-second
	if t2 == nil {
		t.Fatal("the second candidate was not elected")
	}
	if t2.Guard().Session() != t1.Guard().Session() {
		t.Fatal("the candidates are not of one session")
	}
	_, err := c1.Add(ctx, 10, shared.WithGuard(t1.Guard()))
	wantGuardFailed(t, "the former leader's add", err)
	if res, err := c2.Add(ctx, 100, shared.WithGuard(t2.Guard())); err != nil || res.Post != 101 {
		t.Fatalf("the new leader's add = %+v, %v", res, err)
	}
	if got := observed(t, obs, root+"/counter"); !bytes.Equal(got, int64Data(101)) {
		t.Fatalf("counter %x, want 101", got)
	}
	if err := t2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGuardedAddUnderPromotedLock: an add whose optimistic try lost to
// another writer goes on under the promoted lock, still fenced by the
// caller's guard: it commits while the term lasts, and once the term is
// over it is refused, tries under the lock included.
func TestGuardedAddUnderPromotedLock(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	term := lead(t, ctx, c, root+"/leader", "a")
	p := root + "/counter"
	cn := newCounter(t, c, p, shared.WithRetryPolicy(retry.NTimes(0, 0)), shared.WithPromotedLock(root+"/lock", nil))
	if _, err := cn.Initialize(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	shared.BeforeWrite(cn, func() {
		once.Do(func() {
			if _, err := obs.Set(p, int64Data(5), -1); err != nil {
				t.Error(err)
			}
		})
	})
	g := shared.WithGuard(term.Guard())
	res, err := cn.Add(ctx, 10, g)
	if err != nil || !res.Succeeded || res.OptimisticTries != 1 || res.PromotedTries != 1 || res.Post != 15 {
		t.Fatalf("guarded add promoted to the lock = %+v, %v; want one try of each, 5 + 10", res, err)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	res, err = cn.Add(ctx, 10, g)
	wantGuardFailed(t, "guarded add after the term", err)
	if res.OptimisticTries+res.PromotedTries != 0 {
		t.Fatalf("result %+v: a refused add tried", res)
	}
	if got := observed(t, obs, p); !bytes.Equal(got, int64Data(15)) {
		t.Fatalf("counter %x, want 15", got)
	}
}
