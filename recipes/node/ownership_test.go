package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Two Nodes of one client on one path: one session cannot tell their nodes
// apart, so the second Start is refused until the first is closed (and its
// node deleted). On another path, or another client, they coexist.
func TestInUse(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)

	a := newNode(t, c, root+"/x", []byte("a"))
	created(t, a)
	b, err := node.New(c, root+"/x", []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); !errors.Is(err, node.ErrInUse) {
		t.Fatalf("second Start on the path = %v, want ErrInUse", err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("Start after the first closed: %v", err)
	}
	created(t, b)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// Two clients keep an ephemeral node at one path: one node at a time. The
// second waits (ErrOccupied) while the first's is there, and makes its own
// once the first closes.
func TestTwoClientsOnePath(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c1, c2 := open(t, ens.Servers()), open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	p := root + "/leader"

	a := newNode(t, c1, p, []byte("a"))
	created(t, a)
	b := newNode(t, c2, p, []byte("b"))
	zktest.Eventually(t, 10*time.Second, "the second is told the path is occupied", func() error {
		if !errors.Is(b.Err(), node.ErrOccupied) {
			return errors.New("Err = " + errString(b.Err()))
		}
		return nil
	})
	if data, _ := get(t, obs, p); string(data) != "a" {
		t.Fatalf("the first's node holds %q: overwritten", data)
	}
	if closed(a.Untrusted()) {
		t.Fatal("the first's presence ended")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	created(t, b)
	waitFor(t, obs, p, "b", c2.Session().ID(), 10*time.Second)
	if ks := kids(t, obs, root); len(ks) != 1 {
		t.Fatalf("%v", ks)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// With WithAdoptExisting a persistent node already at the path is kept as
// it is found, with the Node's data (as Curator's PersistentNode does);
// Close deletes it.
func TestAdoptExistingTakesNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, 30*time.Second)
	p := root + "/config"
	if _, err := obs.Create(p, []byte("old"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, before := get(t, obs, p)

	n := createdNode(t, c, p, []byte("new"), node.WithMode(connection.Persistent), node.WithAdoptExisting())
	after := waitFor(t, obs, p, "new", 0, 10*time.Second)
	if after.Czxid != before.Czxid {
		t.Fatal("made again instead of kept")
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, st := get(t, obs, p); st != nil {
		t.Fatal("still there after Close")
	}
}

// An ephemeral Node where a persistent node stands waits for it to go:
// it never takes a node it cannot own, and never deletes it.
func TestEphemeralWaitsForPersistent(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	obs := ens.Conn(t)
	p := root + "/x"
	if _, err := obs.Create(p, []byte("theirs"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, c, p, []byte("ours"))
	zktest.Eventually(t, 10*time.Second, "occupied", func() error {
		if !errors.Is(n.Err(), node.ErrOccupied) {
			return errors.New(errString(n.Err()))
		}
		return nil
	})
	t.Logf("Err: %v", n.Err())
	if err := obs.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	created(t, n)
	waitFor(t, obs, p, "ours", c.Session().ID(), 10*time.Second)
}

// Close deletes only the node the Node made: when someone else deleted it
// and another client made its own at the path (while this one was cut
// off), Close leaves that one.
func TestCloseLeavesAnotherNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c1 := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	c2 := open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	p := root + "/x"

	a := newNode(t, c1, p, []byte("a"))
	created(t, a)
	b := newNode(t, c2, p, []byte("b"))
	proxy.Blackhole() // a cannot make its node again
	if err := obs.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	created(t, b)
	theirs := waitFor(t, obs, p, "b", c2.Session().ID(), 10*time.Second)
	proxy.Restore()
	zktest.Eventually(t, 20*time.Second, "a sees the path occupied", func() error {
		if !errors.Is(a.Err(), node.ErrOccupied) {
			return errors.New(errString(a.Err()))
		}
		return nil
	})
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, st := get(t, obs, p); st == nil || st.Czxid != theirs.Czxid {
		t.Fatalf("a's Close deleted b's node (now %+v)", st)
	}
}

// A persistent node someone else made at the path before the Node started
// is not the Node's: the Node leaves it as it is (ErrOccupied, its data
// unchanged), and Close leaves it in place.
func TestCloseLeavesForeignNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, 30*time.Second)
	for mode, opts := range map[string][]node.Option{
		"persistent": {node.WithMode(connection.Persistent)},
		"container":  {node.WithMode(connection.Container)},
		"ttl":        {node.WithMode(connection.PersistentTTL), node.WithTTL(time.Minute)},
	} {
		p := root + "/" + mode
		if _, err := obs.Create(p, []byte("theirs"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, before := get(t, obs, p)
		n := newNode(t, c, p, []byte("ours"), opts...)
		zktest.Eventually(t, 10*time.Second, mode+": occupied", func() error {
			if !errors.Is(n.Err(), node.ErrOccupied) {
				return errors.New(errString(n.Err()))
			}
			return nil
		})
		t.Logf("%s: Err: %v", mode, n.Err())
		if err := n.Close(ctx); err != nil {
			t.Fatal(err)
		}
		data, after := get(t, obs, p)
		if after == nil || after.Czxid != before.Czxid || string(data) != "theirs" {
			t.Fatalf("%s: after Close: %q %+v, want the other's node as it was", mode, data, after)
		}
	}
}

// A persistent node someone deleted and made again (an operator's
// re-create, while the Node could not make its own first) is not the
// Node's: it is left as it is, and Close leaves it in place.
func TestCloseLeavesNodeMadeAgainBySomeoneElse(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	p := root + "/x"

	n := createdNode(t, c, p, []byte("ours"), node.WithMode(connection.Persistent))
	proxy.Blackhole() // the Node cannot make its node again first
	if err := obs.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(p, []byte("theirs"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, theirs := get(t, obs, p)
	proxy.Restore()
	zktest.Eventually(t, 20*time.Second, "the Node sees the path occupied", func() error {
		if !errors.Is(n.Err(), node.ErrOccupied) {
			return errors.New(errString(n.Err()))
		}
		return nil
	})
	if data, st := get(t, obs, p); string(data) != "theirs" || st.Czxid != theirs.Czxid {
		t.Fatalf("the other's node was written: %q %+v", data, st)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if data, st := get(t, obs, p); st == nil || st.Czxid != theirs.Czxid || string(data) != "theirs" {
		t.Fatalf("after Close: %q %+v, want the other's node as it was", data, st)
	}
}

// TestCloseNeverDeletesANodeMadeAgainAfterItsDeleteAppliedUnanswered: the
// Node's node is at a fixed path. Close reads it and deletes it at the
// version read; that delete applies and its answer is lost. Before the
// client reconnects, another session makes its own node at the path (as a
// replacement instance of a service would), at the same version (0).
// Close must leave it: a delete whose answer was lost is read again, never
// sent again blind.
func TestCloseNeverDeletesANodeMadeAgainAfterItsDeleteAppliedUnanswered(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/x"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	other := ens.Conn(t)
	lost := testkit.NewLostDelete(proxy, obs, other, p)
	c := open(t, proxy.Servers(), connection.WithObserver(lost.Observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	n := createdNode(t, c, p, []byte("ours"))
	lost.Arm()
	cerr := n.Close(ctx)
	lost.Made(t)
	if _, st := get(t, obs, p); st == nil || st.EphemeralOwner != other.SessionID() {
		t.Errorf("Close (%v) deleted the node another session made at %s after its own delete applied (requests sent: %v)", cerr, p, lost.Sent())
	}
}

// TestCloseNeverDeletesANodeMadeAgainWhileItsDeleteWaitedForAConnection:
// Close reads the Node's node (synced) and hands its delete, at the
// version read, to the connection just as the connection drops, and the
// client reconnects only later. Meanwhile an operator deletes the Node's
// node and another session makes its own at the path (a replacement
// instance of a service), at the same version (0). No delete of Close's
// may be written on another connection than its read: the other's node
// stays.
func TestCloseNeverDeletesANodeMadeAgainWhileItsDeleteWaitedForAConnection(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/x"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	other := ens.Conn(t)
	cut := testkit.NewCutDelete(proxy, obs, other, p)
	c := open(t, proxy.Servers(), connection.WithObserver(cut.Observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	n := createdNode(t, c, p, []byte("ours"))
	cut.Arm()
	cerr := n.Close(ctx)
	cut.Made(t)
	if _, st := get(t, obs, p); st == nil || st.EphemeralOwner != other.SessionID() {
		t.Errorf("Close (%v) deleted the node another session made at %s while its delete waited for a connection (requests sent: %v)", cerr, p, cut.Sent())
	}
}

// TestClosesWhoseContextEndsWhileCutOffLeaveNoNodeOnceReconnected: six
// Nodes of one client (ephemeral, persistent, ephemeral sequential) are
// closed while the client is cut off, each with a context that ends before
// the link returns. Once it returns (the session lives), every node must
// go.
func TestClosesWhoseContextEndsWhileCutOffLeaveNoNodeOnceReconnected(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	obs := ens.Conn(t)
	modes := []connection.Mode{connection.Ephemeral, connection.Persistent, connection.EphemeralSequential}
	var nodes []*node.Node
	for i := range 6 {
		nodes = append(nodes, createdNode(t, c, fmt.Sprintf("%s/n%d", root, i), []byte("x"), node.WithMode(modes[i%3])))
	}
	var paths []string
	for _, n := range nodes {
		paths = append(paths, n.Path())
	}
	p.Cut()
	done := make(chan error, len(nodes))
	for _, n := range nodes {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			done <- n.Close(ctx)
		}()
	}
	for range nodes {
		select {
		case err := <-done:
			t.Logf("Close while cut off: %v", err)
		case <-time.After(3 * time.Second):
			t.Fatal("a Close with a 500ms context still waits after 3s")
		}
	}
	p.Restore()
	deadline := time.Now().Add(8 * time.Second)
	for {
		var left []string
		for _, pth := range paths {
			if _, err := obs.Sync(pth); err != nil && !errors.Is(err, zk.ErrNoNode) {
				t.Fatal(err)
			}
			if ok, _, err := obs.Exists(pth); err != nil {
				t.Fatal(err)
			} else if ok {
				left = append(left, pth)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphaned after Close while cut off, session live (%v): %v", c.Session().Err(), left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClientCloseWhileNodeClosesWaitForAConnectionReturnsPromptly: Nodes
// of one client close, cut off, with long contexts; the client's Close
// must return within 3s, and so must every Node's Close.
func TestClientCloseWhileNodeClosesWaitForAConnectionReturnsPromptly(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	var nodes []*node.Node
	for i := range 6 {
		mode := connection.Ephemeral
		if i%2 == 1 {
			mode = connection.Persistent
		}
		nodes = append(nodes, createdNode(t, c, fmt.Sprintf("%s/n%d", root, i), []byte("x"), node.WithMode(mode)))
	}
	p.Cut()
	ctx := ctxFor(t, time.Minute)
	done := make(chan error, len(nodes))
	for _, n := range nodes {
		go func() { done <- n.Close(ctx) }()
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	cerr := c.Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("client Close took %v (%v)", took, cerr)
	}
	timeout := time.After(3 * time.Second)
	for i := range nodes {
		select {
		case err := <-done:
			t.Logf("Node Close after client Close: %v", err)
		case <-timeout:
			t.Fatalf("%d Node Closes still waiting 3s after the client's Close", len(nodes)-i)
		}
	}
	p.Restore()
}
