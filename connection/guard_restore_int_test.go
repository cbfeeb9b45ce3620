package connection_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// TestGuardNotResolvedBeforeWatchesRestored: a hold at a fixed path (a
// Claim) that ends at the first event of its node's watch — the most a
// holder can do. Its client (session policy) is cut off; meanwhile someone
// deletes the node and another client makes one at the same path. A
// guarded transaction called during the cut waits in go-zookeeper's
// queue. When the network heals, go-zookeeper writes it on the new
// connection before the setWatches that tells the client of the change
// (restore.go: the client reports Reconnected only once those are
// answered). Resolved then, the guard's check would pass on the other
// client's node, since the holder has heard nothing yet — a window as wide
// as the whole cut. So a guard is resolved only on a connection whose
// watches are registered again (restoredNow); before, its token stays and
// the transaction fails with ErrGuardFailed.
func TestGuardNotResolvedBeforeWatchesRestored(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	a := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	b := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := b.Create(ctx, root+"/state", []byte("init"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	node := root + "/hold"
	claim, w, err := connx.Of(a).Claim(ctx, node, []byte(connx.NewUUID()))
	if err != nil {
		t.Fatal(err)
	}
	heard := func() error {
		select {
		case <-w.Done():
			return errors.New("the node's watch fired")
		default:
			return nil
		}
	}
	g := connx.NewGuard(claim.Path, claim.Session, heard)
	states := a.Listen(ctx)

	p.Cut()
	expect(t, states, 10*time.Second, connection.Suspended)
	obs := ens.Conn(t)
	if err := obs.Delete(node, -1); err != nil { // an operator
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, node, []byte("b"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	during := make(chan error, 1)
	go func() {
		_, err := a.Multi(ctx, g, setOp(root+"/state", "a, queued in the cut"))
		during <- err
	}()
	time.Sleep(500 * time.Millisecond) // queued in go-zookeeper
	p.Restore()
	expect(t, states, 15*time.Second, connection.Reconnected)
	err = <-during
	t.Logf("queued in the cut: %v; the node's watch: %v", err, w.Event().Type)
	data, st, gerr := obs.Get(root + "/state")
	if gerr != nil {
		t.Fatal(gerr)
	}
	if err == nil || string(data) != "init" {
		t.Fatalf("a transaction guarded by a hold whose node was replaced committed on the other client's node: "+
			"Multi %v, state %q (version %d); want ErrGuardFailed, nothing applied", err, data, st.Version)
	}
	if !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("Multi %v, want ErrGuardFailed", err)
	}
}
