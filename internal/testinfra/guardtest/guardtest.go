// Package guardtest is the test every kind of hold passes with its Guard
// (connection.Guard): a transaction fenced by a hold commits while the
// hold lasts and never after, against real servers. Each recipe's tests
// run it with a Kind of their own.
package guardtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Hold is what the test needs of a hold.
type Hold interface {
	Guard() *connection.Guard
	Done() <-chan struct{}
}

// Kind is a kind of hold: how a participant takes it and lets it go.
type Kind struct {
	// Setup, if set, prepares path once, on the first participant's
	// client (a queue puts its one item).
	Setup func(ctx context.Context, t *testing.T, c *connection.Client, path string)
	// Take makes a new participant on c take the hold at path, waiting
	// for it, and returns it with its release.
	Take func(ctx context.Context, t *testing.T, c *connection.Client, path string) (Hold, func(context.Context) error)
	// Fixed says the hold's node is at a fixed path, which the next
	// holder makes again (a taken queue item, a naive lock).
	Fixed bool
	// Released and Lost are the recipe's causes after a release and
	// after a loss, which a refused transaction's error also matches.
	Released, Lost error
}

// Run runs the guard's tests for kind k on the shared ensemble.
func Run(t *testing.T, shared *zktest.Shared, k Kind) {
	t.Run("LiveHolderCommits", func(t *testing.T) { t.Parallel(); liveHolderCommits(t, shared.Ensemble(t), k) })
	t.Run("OperatorDeleteNeverCommits", func(t *testing.T) { t.Parallel(); operatorDelete(t, shared.Ensemble(t), k) })
	t.Run("CutOffHolderNeverCommits", func(t *testing.T) { t.Parallel(); cutOff(t, shared.Ensemble(t), k) })
}

// state makes the node the transactions write to, and returns a function
// that reads it from a client of the test's own.
func state(t *testing.T, ens *zktest.Ensemble, p string) func() (string, int32) {
	t.Helper()
	obs := ens.Conn(t)
	if _, err := obs.Create(p, []byte("init"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return func() (string, int32) {
		t.Helper()
		if _, err := obs.Sync(p); err != nil {
			t.Fatal(err)
		}
		data, st, err := obs.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(data), st.Version
	}
}

func set(p, v string) *zk.SetDataRequest {
	return &zk.SetDataRequest{Path: p, Data: []byte(v), Version: -1}
}

// refused fails the test unless err says the guard refused the
// transaction.
func refused(t *testing.T, what string, err error, causes ...error) {
	t.Helper()
	if !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("%s: %v, want an error matching ErrGuardFailed", what, err)
	}
	for _, c := range causes {
		if c != nil && !errors.Is(err, c) {
			t.Errorf("%s: %v, want it to match %v too", what, err, c)
		}
	}
}

// liveHolderCommits: a holder's guarded transactions commit, the guard
// anywhere among the ops, and the other ops' failures are reported as
// they are; once the hold is released, the guard refuses.
func liveHolderCommits(t *testing.T, ens *zktest.Ensemble, k Kind) {
	root := ens.Root(t)
	read := state(t, ens, root+"/state")
	c := testkit.Open(t, ens.Servers())
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/hold"
	if k.Setup != nil {
		k.Setup(ctx, t, c, path)
	}
	h, release := k.Take(ctx, t, c, path)
	g := h.Guard()
	res, err := c.Multi(ctx, g, set(root+"/state", "one"), &zk.CreateRequest{Path: root + "/made", Data: []byte("x")})
	if err != nil {
		t.Fatalf("guarded transaction of a live holder: %v", err)
	}
	if len(res) != 3 || res[2].String != root+"/made" {
		t.Fatalf("responses %+v: want 3, in the order of the ops", res)
	}
	if _, err := c.Multi(ctx, set(root+"/state", "two"), g); err != nil {
		t.Fatalf("guarded transaction, guard last: %v", err)
	}
	_, err = c.Multi(ctx, g, &zk.CreateRequest{Path: root + "/made"}, set(root+"/state", "three"))
	if !errors.Is(err, zk.ErrNodeExists) || errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("another op failing under a live guard: %v, want zk.ErrNodeExists and not ErrGuardFailed", err)
	}
	if data, _ := read(); data != "two" {
		t.Fatalf("state %q, want the live holder's second write", data)
	}
	if err := release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	_, err = c.Multi(ctx, g, set(root+"/state", "released"))
	refused(t, "guarded transaction after the release", err, k.Released)
	_, err = c.Multi(ctx, h.Guard(), set(root+"/state", "released"))
	refused(t, "transaction guarded by the released holder's Guard", err)
	if data, v := read(); data != "two" || v != 2 {
		t.Fatalf("state %q (version %d) after the release: want \"two\" (version 2)", data, v)
	}
}

// operatorDelete: someone deletes the holder's node. The holder's guarded
// transaction sent at once fails — on the server if the holder has not
// heard of the deletion yet, at once if it has — and so does every later
// one, also once another participant of the same client holds (at a fixed
// path, on a node at the same path), whose own guard commits.
func operatorDelete(t *testing.T, ens *zktest.Ensemble, k Kind) {
	root := ens.Root(t)
	read := state(t, ens, root+"/state")
	c := testkit.Open(t, ens.Servers())
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/hold"
	if k.Setup != nil {
		k.Setup(ctx, t, c, path)
	}
	a, releaseA := k.Take(ctx, t, c, path)
	g := a.Guard()
	operator := ens.Conn(t)
	if err := operator.Delete(connx.Of(c).ServerPath(g.Path()), -1); err != nil {
		t.Fatal(err)
	}
	_, err := c.Multi(ctx, g, set(root+"/state", "a"))
	refused(t, "guarded transaction right after an operator deleted the node", err)
	select {
	case <-a.Done():
	case <-ctx.Done():
		t.Fatal("the hold did not end after its node was deleted")
	}
	_, err = c.Multi(ctx, g, set(root+"/state", "a"))
	refused(t, "guarded transaction once the holder heard of the deletion", err, k.Lost, connection.ErrNodeDeleted)

	b, releaseB := k.Take(ctx, t, c, path)
	if k.Fixed && b.Guard().Path() != g.Path() {
		t.Fatalf("the next holder's node %s is not at the first's path %s", b.Guard().Path(), g.Path())
	}
	_, err = c.Multi(ctx, g, set(root+"/state", "a"))
	refused(t, "the first holder's guarded transaction once another participant of its client holds", err, k.Lost, connection.ErrNodeDeleted)
	if _, err := c.Multi(ctx, b.Guard(), set(root+"/state", "b")); err != nil {
		t.Fatalf("the next holder's guarded transaction: %v", err)
	}
	if data, v := read(); data != "b" || v != 1 {
		t.Fatalf("state %q (version %d): want only the next holder's write", data, v)
	}
	_ = releaseA(ctx) // lost: says so
	if err := releaseB(ctx); err != nil {
		t.Fatal(err)
	}
}

// cutOff: holder A is cut off from the ensemble (a blackhole) for longer
// than its session timeout; its guarded transaction sent into the cut does
// not commit; the server expires A's session and B, on another client,
// takes the hold (at a fixed path, making A's node's path again). After
// the network heals, A's client is in a new session: the transaction sent
// again, and a new one, are refused, and only B's commits.
func cutOff(t *testing.T, ens *zktest.Ensemble, k Kind) {
	root := ens.Root(t)
	read := state(t, ens, root+"/state")
	p := ens.Proxy(t)
	ac := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	bc := testkit.Open(t, ens.Servers())
	ctx := testkit.Ctx(t, 2*time.Minute)
	path := root + "/hold"
	if k.Setup != nil {
		k.Setup(ctx, t, ac, path)
	}
	a, releaseA := k.Take(ctx, t, ac, path)
	g := a.Guard()
	aSess := g.Session()

	p.Blackhole()
	during := make(chan error, 1)
	go func() {
		_, err := ac.Multi(ctx, g, set(root+"/state", "a, sent into the cut"))
		during <- err
	}()
	b, releaseB := k.Take(ctx, t, bc, path) // once the server expired A's session
	if k.Fixed && b.Guard().Path() != g.Path() {
		t.Fatalf("B's node %s is not at A's path %s", b.Guard().Path(), g.Path())
	}
	p.Restore()
	zktest.Eventually(t, 30*time.Second, "A's client has a new session", func() error {
		s, err := ac.WaitSession(ctx)
		if err == nil && s == aSess {
			err = errors.New("still the old session")
		}
		return err
	})
	if err := <-during; err == nil {
		t.Fatal("A's transaction sent into the cut was answered as applied")
	} else {
		t.Logf("A's transaction sent into the cut: %v", err)
	}
	_, err := ac.Multi(ctx, g, set(root+"/state", "a, sent again"))
	// The standard policy: A's hold ended at the suspension that came
	// before its session's loss, and says so.
	refused(t, "A's transaction sent again after the network healed", err, k.Lost, connection.ErrSuspended)
	_, err = ac.Multi(ctx, a.Guard(), set(root+"/state", "a, new"))
	refused(t, "A's new guarded transaction after the network healed", err)
	if _, err := bc.Multi(ctx, b.Guard(), set(root+"/state", "b")); err != nil {
		t.Fatalf("B's guarded transaction: %v", err)
	}
	// Whatever A's old handle still had has had its chance: A's new
	// session has answered since.
	if err := ac.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}
	if data, v := read(); data != "b" || v != 1 {
		t.Fatalf("state %q (version %d): want B's write only", data, v)
	}
	_ = releaseA(ctx) // lost: says so
	if err := releaseB(ctx); err != nil {
		t.Fatal(err)
	}
}
