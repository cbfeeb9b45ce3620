package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// lock takes a new mutex on c at p and returns it held.
func lock(t *testing.T, ctx context.Context, c *connection.Client, p string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

// lastingGuard is the guard of a hold at p on c that never ends on its
// own: only the server (its node gone) and the connection can refuse it.
func lastingGuard(t *testing.T, ctx context.Context, c *connection.Client, p string) *connection.Guard {
	t.Helper()
	claim, _, err := connx.Of(c).Claim(ctx, p, []byte(connx.NewUUID()))
	if err != nil {
		t.Fatal(err)
	}
	return connx.NewGuard(claim.Path, claim.Session, func() error { return nil })
}

// TestGuardedSetDataCommitsOnlyWhileHeld: a guarded SetData commits while
// the lock is held and becomes the Node's data; once the lock is
// released it is refused, the node keeps its data, and so does the Node:
// the node made again after someone deleted it holds the data the hold
// let through, never the refused data.
func TestGuardedSetDataCommitsOnlyWhileHeld(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, 30*time.Second)
	p := root + "/members/a"
	n := createdNode(t, c, p, []byte("v1"))
	m := lock(t, ctx, c, root+"/lock")
	g := node.WithGuard(m.Guard())
	if err := n.SetData(ctx, []byte("held"), g); err != nil {
		t.Fatalf("guarded SetData while held: %v", err)
	}
	if data, _ := get(t, obs, p); string(data) != "held" {
		t.Fatalf("the node holds %q, want the guarded write", data)
	}
	if string(n.Data()) != "held" {
		t.Fatalf("Data = %q, want the committed write", n.Data())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	err := n.SetData(ctx, []byte("released"), g)
	wantGuardFailed(t, "guarded SetData after the release", err)
	err = n.SetData(ctx, []byte("no hold"), node.WithGuard(nil))
	wantGuardFailed(t, "SetData with the guard of no hold", err)
	if err := n.SetData(ctx, []byte("x"), nil); !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("SetData with a nil option: %v, want ErrInvalidOption", err)
	}
	if string(n.Data()) != "held" {
		t.Fatalf("Data = %q after refused writes, want \"held\"", n.Data())
	}
	_, st := get(t, obs, p)
	if err := obs.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	made := waitFor(t, obs, p, "held", c.Session().ID(), 10*time.Second)
	if made.Czxid == st.Czxid {
		t.Fatal("the node was not made again")
	}
	// A Node never started takes no guarded write.
	idle, err := node.New(c, root+"/members/idle", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.SetData(ctx, []byte("x"), node.WithGuard(lastingGuard(t, ctx, c, root+"/claim"))); !errors.Is(err, node.ErrNotStarted) {
		t.Fatalf("guarded SetData before Start: %v, want ErrNotStarted", err)
	}
}

// TestGuardedSetDataAfterHoldNodeDeleted: another client deletes the
// hold's node; the guarded write, sent by a holder that never hears of
// it, is refused by the server (ErrGuardFailed, NoNode): the node keeps
// its data, and so does the Node. A guard of another client's hold is
// refused too.
func TestGuardedSetDataAfterHoldNodeDeleted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c, other := open(t, ens.Servers()), open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	p := root + "/members/a"
	n := createdNode(t, c, p, []byte("v1"))
	g := lastingGuard(t, ctx, c, root+"/hold")
	if err := n.SetData(ctx, []byte("v2"), node.WithGuard(g)); err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(g.Path(), -1); err != nil {
		t.Fatal(err)
	}
	err := n.SetData(ctx, []byte("v3"), node.WithGuard(g))
	wantGuardFailed(t, "guarded SetData after the hold's node was deleted", err)
	if !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("guarded SetData: %v, want the server's NoNode", err)
	}
	foreign := lastingGuard(t, ctx, other, root+"/foreign")
	err = n.SetData(ctx, []byte("v4"), node.WithGuard(foreign))
	wantGuardFailed(t, "SetData guarded by another client's hold", err)
	if data, st := get(t, obs, p); string(data) != "v2" || st.Version != 1 {
		t.Fatalf("the node holds %q (version %d), want \"v2\" (version 1)", data, st.Version)
	}
	if string(n.Data()) != "v2" {
		t.Fatalf("Data = %q, want \"v2\"", n.Data())
	}
	if err := n.SetData(ctx, []byte("v5")); err != nil {
		t.Fatalf("unguarded SetData after the refused ones: %v", err)
	}
}

// TestGuardedSetDataLostAnswer: the guarded write applies and its answer
// is lost. SetData says the outcome is unknown; the node holds the new
// data, and the Node does not write its former data back over it in the
// same session.
func TestGuardedSetDataLostAnswer(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	p := root + "/members/a"
	n := createdNode(t, c, p, []byte("v1"))
	g := lastingGuard(t, ctx, c, root+"/hold")
	sess := c.Session()
	proxy.DropReplies()
	done := make(chan error, 1)
	go func() { done <- n.SetData(ctx, []byte("v2"), node.WithGuard(g)) }()
	waitFor(t, obs, p, "v2", sess.ID(), 10*time.Second)
	proxy.Restore()
	if err := <-done; !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Fatalf("guarded SetData whose answer was lost: %v, want ErrOutcomeUnknown", err)
	}
	if _, err := n.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Session() != sess {
		t.Fatal("the session changed: the test did not exercise the same-session case")
	}
	if err := c.Sync(ctx, p); err != nil {
		t.Fatal(err)
	}
	if data, st := get(t, obs, p); string(data) != "v2" || st.Version != 1 {
		t.Fatalf("the node holds %q (version %d), want the lost write's \"v2\", written once", data, st.Version)
	}
}

// TestGuardedSetDataByCutOffHolderNeverCommits: the holder's client is
// cut off past its session timeout with a guarded write waiting or in
// flight; the server expires its session and another client takes the
// lock. The write never commits: the Node makes its node again in its
// new session with the data it had, and its guarded writes are refused.
func TestGuardedSetDataByCutOffHolderNeverCommits(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	a := open(t, proxy.Servers(), connection.WithSessionTimeout(time.Second))
	b := open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	p := root + "/members/a"
	n := newNode(t, a, p, []byte("v1"))
	created(t, n)
	ma := lock(t, ctx, a, root+"/lock")
	g := node.WithGuard(ma.Guard())
	aSess := a.Session()

	proxy.Blackhole()
	during := make(chan error, 1)
	go func() { during <- n.SetData(ctx, []byte("cut off"), g) }()
	mb := lock(t, ctx, b, root+"/lock") // once the server expired A's session
	proxy.Restore()
	if err := <-during; !errors.Is(err, connection.ErrGuardFailed) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Fatalf("guarded SetData into the cut: %v, want ErrGuardFailed or ErrOutcomeUnknown", err)
	} else {
		t.Logf("guarded SetData into the cut: %v", err)
	}
	zktest.Eventually(t, 30*time.Second, "the node made again in A's new session", func() error {
		s := a.Session()
		if s == nil || s == aSess {
			return errors.New("still the old session")
		}
		data, st := get(t, obs, p)
		if st == nil || st.EphemeralOwner != s.ID() {
			return errors.New("not made again yet")
		}
		if string(data) != "v1" {
			t.Fatalf("the node made again holds %q, want \"v1\"", data)
		}
		return nil
	})
	err := n.SetData(ctx, []byte("after"), g)
	wantGuardFailed(t, "guarded SetData after the network healed", err)
	if data, _ := get(t, obs, p); string(data) != "v1" {
		t.Fatalf("the node holds %q, want \"v1\"", data)
	}
	if err := mb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGuardedSetDataWaitsForPresence: while another session's node is in
// the way, a guarded write waits; given up before it is sent, it is never
// sent (ctx's error, not an unknown outcome); one still waiting at Close
// fails with ErrClosed. The other node is never written.
func TestGuardedSetDataWaitsForPresence(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, 30*time.Second)
	p := root + "/members/a"
	if _, err := obs.Create(root+"/members", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	n, err := node.New(c, p, []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	g := node.WithGuard(lastingGuard(t, ctx, c, root+"/hold"))
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = n.SetData(short, []byte("given up"), g)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Fatalf("guarded SetData given up while the node is absent: %v, want DeadlineExceeded only", err)
	}
	waiting := make(chan error, 1)
	go func() { waiting <- n.SetData(ctx, []byte("at close"), g) }()
	zktest.Eventually(t, 5*time.Second, "the write waits", func() error {
		if errors.Is(n.Err(), node.ErrOccupied) {
			return nil
		}
		return errors.New("not occupied")
	})
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; !errors.Is(err, node.ErrClosed) {
		t.Fatalf("guarded SetData waiting at Close: %v, want ErrClosed", err)
	}
	if data, _ := get(t, obs, p); string(data) != "theirs" {
		t.Fatalf("the other node holds %q", data)
	}
}
