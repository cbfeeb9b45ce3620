package connection_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func setOp(p, v string) *zk.SetDataRequest {
	return &zk.SetDataRequest{Path: p, Data: []byte(v), Version: -1}
}

// lasting is a guard's over for a hold that never ends: a holder that
// never hears of anything, so that only the server and the connection
// can refuse its transactions.
func lasting() error { return nil }

// TestGuardMapsServerAnswers: through a namespace, a guarded transaction
// commits while the guard's node is there; another op's failure is
// reported as it is; once another client deleted the node, the server's
// NoNode for the guard's check is ErrGuardFailed, and nothing was applied.
func TestGuardMapsServerAnswers(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers(), connection.WithNamespace(root+"/ns"))
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, "/state", []byte("init"), connection.Persistent, connection.WithParents()); err != nil {
		t.Fatal(err)
	}
	claim, _, err := connx.Of(c).Claim(ctx, "/hold", []byte(connx.NewUUID()))
	if err != nil {
		t.Fatal(err)
	}
	g := connx.NewGuard(claim.Path, claim.Session, lasting)
	res, err := c.Multi(ctx, setOp("/state", "one"), g, &zk.CreateRequest{Path: "/made"})
	if err != nil {
		t.Fatalf("guarded transaction: %v", err)
	}
	if len(res) != 3 || res[1].Error != nil || res[2].String != "/made" {
		t.Fatalf("responses %+v: want three, in the order of the ops", res)
	}
	_, err = c.Multi(ctx, g, &zk.CreateRequest{Path: "/made"})
	if !errors.Is(err, zk.ErrNodeExists) || errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("another op failing: %v, want zk.ErrNodeExists, not ErrGuardFailed", err)
	}
	obs := ens.Conn(t)
	if err := obs.Delete(root+"/ns/hold", -1); err != nil {
		t.Fatal(err)
	}
	res, err = c.Multi(ctx, g, setOp("/state", "two"))
	if !errors.Is(err, connection.ErrGuardFailed) || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("guard of a deleted node: %v, want ErrGuardFailed and zk.ErrNoNode", err)
	}
	t.Log(err)
	if len(res) != 2 || !errors.Is(res[0].Error, zk.ErrNoNode) {
		t.Fatalf("responses %+v: want the guard's NoNode first", res)
	}
	if data, _, err := obs.Get(root + "/ns/state"); err != nil || string(data) != "one" {
		t.Fatalf("state %q, %v: want the write made while the node was there", data, err)
	}
}

// TestGuardWrittenAfterItsHoldEnded: a hold on when Multi is called and
// over when the transaction is written (it waited in the client's queue)
// does not commit, though its node is still there; a hold that lasts
// commits. The connection decides as it writes the transaction.
func TestGuardWrittenAfterItsHoldEnded(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/state", []byte("init"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	claim, _, err := connx.Of(c).Claim(ctx, root+"/hold", []byte(connx.NewUUID()))
	if err != nil {
		t.Fatal(err)
	}
	// Multi asks first; the connection asks as it writes.
	var calls atomic.Int32
	endsBeforeWrite := func() error {
		if calls.Add(1) == 1 {
			return nil
		}
		return errors.New("released")
	}
	_, err = c.Multi(ctx, connx.NewGuard(claim.Path, claim.Session, endsBeforeWrite), setOp(root+"/state", "late"))
	if !errors.Is(err, connection.ErrGuardFailed) || !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("transaction written after its hold ended: %v, want ErrGuardFailed (BadVersion)", err)
	}
	t.Log(err)
	if n := calls.Load(); n < 2 {
		t.Fatalf("the hold was asked %d times, want at Multi and at the write", n)
	}
	if _, err := c.Multi(ctx, connx.NewGuard(claim.Path, claim.Session, lasting), setOp(root+"/state", "held")); err != nil {
		t.Fatalf("transaction of a lasting hold: %v", err)
	}
	obs := ens.Conn(t)
	if data, st, err := obs.Get(root + "/state"); err != nil || string(data) != "held" || st.Version != 1 {
		t.Fatalf("state %q, %v: want only the lasting hold's write", data, err)
	}
}

// TestGuardNeverCrossesIntoNextSession: a hold at a fixed path (a Claim)
// whose holder never hears of anything. Its client is cut off past the
// session timeout with a guarded transaction in flight; the server
// expires the session and another client makes a node at the same path;
// the network heals. The transaction in flight never runs, and sent again
// it is refused: its session is gone. A plain check of the path, which
// runs in whatever session the client has, passes on the other client's
// node: that is what the guard is for.
func TestGuardNeverCrossesIntoNextSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	a := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	b := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := b.Create(ctx, root+"/state", []byte("init"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	node := root + "/hold"
	claim, _, err := connx.Of(a).Claim(ctx, node, []byte(connx.NewUUID()))
	if err != nil {
		t.Fatal(err)
	}
	g := connx.NewGuard(claim.Path, claim.Session, lasting)
	states := a.Listen(ctx)

	p.Blackhole()
	during := make(chan error, 1)
	go func() {
		_, err := a.Multi(ctx, g, setOp(root+"/state", "a, in flight"))
		during <- err
	}()
	zktest.Eventually(t, 10*time.Second, "B makes the node after A's session expired", func() error {
		_, err := b.Create(ctx, node, []byte("b"), connection.Ephemeral)
		return err
	})
	expect(t, states, 5*time.Second, connection.Suspended, connection.Lost)
	p.Restore()
	expect(t, states, 15*time.Second, connection.Reconnected)
	if err := <-during; err == nil {
		t.Fatal("the transaction in flight across the expiry was answered as applied")
	} else {
		t.Logf("in flight: %v", err)
	}
	_, err = a.Multi(ctx, g, setOp(root+"/state", "a, again"))
	if !errors.Is(err, connection.ErrGuardFailed) || !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("guarded transaction after its session: %v, want ErrGuardFailed and ErrSessionLost", err)
	}
	t.Log(err)
	if err := a.Sync(ctx, node); err != nil {
		t.Fatal(err)
	}
	obs := ens.Conn(t)
	if data, st, err := obs.Get(root + "/state"); err != nil || string(data) != "init" || st.Version != 0 {
		t.Fatalf("state %q (%v): a guarded transaction of the expired session ran", data, err)
	}
	// Without the guard: a plain check of the path passes on B's node.
	if _, err := a.Multi(ctx, &zk.CheckVersionRequest{Path: node, Version: -1}, setOp(root+"/state", "a, unguarded")); err != nil {
		t.Fatalf("plain check of B's node: %v", err)
	}
	if data, _, err := obs.Get(root + "/state"); err != nil || string(data) != "a, unguarded" {
		t.Fatalf("state %q (%v) after the unguarded write", data, err)
	}
}

// TestGuardMisuse: a guard of no hold, guards of two clients' sessions in
// one transaction, and a transaction pinned to a session that is not the
// hold's are refused before anything is sent.
func TestGuardMisuse(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	a, b := open(t, ens.Servers()), open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := a.Create(ctx, root+"/state", []byte("init"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	ca, _, err := connx.Of(a).Claim(ctx, root+"/a", []byte(connx.NewUUID()))
	if err != nil {
		t.Fatal(err)
	}
	cb, _, err := connx.Of(b).Claim(ctx, root+"/b", []byte(connx.NewUUID()))
	if err != nil {
		t.Fatal(err)
	}
	ga, gb := connx.NewGuard(ca.Path, ca.Session, lasting), connx.NewGuard(cb.Path, cb.Session, lasting)
	var none *connection.Guard
	if _, err := a.Multi(ctx, none, setOp(root+"/state", "x")); !errors.Is(err, connection.ErrGuardFailed) {
		t.Errorf("nil guard: %v, want ErrGuardFailed", err)
	}
	if _, err := a.Multi(ctx, connx.NewGuard(ca.Path, nil, lasting), setOp(root+"/state", "x")); !errors.Is(err, connection.ErrGuardFailed) {
		t.Errorf("guard without a session: %v, want ErrGuardFailed", err)
	}
	if _, err := a.Multi(ctx, ga, gb, setOp(root+"/state", "x")); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("guards of two sessions: %v, want ErrInvalidOption", err)
	}
	if _, err := a.Multi(connx.Pin(ctx, cb.Session), ga, setOp(root+"/state", "x")); !errors.Is(err, connection.ErrGuardFailed) {
		t.Errorf("pinned to another session: %v, want ErrGuardFailed", err)
	}
	if _, err := a.Multi(ctx, connx.NewGuard("bad path", ca.Session, lasting), setOp(root+"/state", "x")); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("guard with a bad path: %v, want ErrInvalidPath", err)
	}
	if data, _, err := a.Get(ctx, root+"/state"); err != nil || string(data) != "init" {
		t.Fatalf("state %q, %v: a refused transaction was applied", data, err)
	}
}
