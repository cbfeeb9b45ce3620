package node_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// testTTL is the TTL of the tests' TTL nodes: the servers' container
// check runs every second (zktest's default), so a node goes between its
// TTL and a second later.
const testTTL = 600 * time.Millisecond

func newTTL(t testing.TB, c *connection.Client, p string, data []byte, opts ...node.TTLOption) *node.TTLNode {
	t.Helper()
	n, err := node.NewTTL(c, p, data, testTTL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(ctxFor(t, 10*time.Second)) })
	return n
}

// TestTTLNode: the node stays for many TTLs, with its child touched, and
// a watcher of the node sees nothing of it: no data change, no child
// change, the node's mzxid and pzxid as they were. After Close both are
// left to their TTL: the child goes, then the node.
func TestTTLNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	p := root + "/svc"

	// Touches every quarter TTL: room for a loaded test machine.
	n := newTTL(t, c, p, []byte("v"), node.WithTouchInterval(testTTL/4))
	created(t, n)
	if n.Path() != p || n.TouchPath() != p+"/touch" {
		t.Fatalf("Path %q, TouchPath %q", n.Path(), n.TouchPath())
	}
	zktest.Eventually(t, 10*time.Second, "the child touched", func() error {
		if _, st := get(t, obs, p+"/touch"); st == nil {
			return errors.New("no child")
		}
		return nil
	})
	_, before, dataW, err := obs.GetW(p)
	if err != nil {
		t.Fatal(err)
	}
	_, _, kidsW, err := obs.ChildrenW(p)
	if err != nil {
		t.Fatal(err)
	}
	_, touchBefore := get(t, obs, p+"/touch")
	// Watching for churn means watching for a while: five TTLs.
	select {
	case ev := <-dataW:
		t.Fatalf("the node's data watch fired: %v", ev)
	case ev := <-kidsW:
		t.Fatalf("the node's child watch fired: %v", ev)
	case <-time.After(5 * testTTL):
	}
	data, after := get(t, obs, p)
	if after == nil || after.Czxid != before.Czxid || after.Mzxid != before.Mzxid || after.Pzxid != before.Pzxid || string(data) != "v" {
		t.Fatalf("the node changed: %+v, was %+v", after, before)
	}
	_, touchAfter := get(t, obs, p+"/touch")
	if touches := touchAfter.Version - touchBefore.Version; touches < 3 {
		t.Fatalf("the child was touched %d times in five TTLs", touches)
	} else {
		t.Logf("touched %d times in %v (TTL %v)", touches, 5*testTTL, testTTL)
	}

	if err := n.SetData(ctx, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, obs, p, "v2", 0, 10*time.Second)
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closedAt := time.Now()
	if _, st := get(t, obs, p); st == nil {
		t.Fatal("Close deleted the node: it is left to its TTL")
	}
	var childGone time.Duration
	zktest.Eventually(t, 20*time.Second, "the child and the node expire", func() error {
		if _, st := get(t, obs, p+"/touch"); st != nil {
			return errors.New("the child is there")
		}
		if childGone == 0 {
			childGone = time.Since(closedAt)
		}
		if _, st := get(t, obs, p); st != nil {
			return errors.New("the node is there")
		}
		return nil
	})
	t.Logf("after Close: the child went after %v, the node after %v (TTL %v, check interval %v)",
		childGone.Round(time.Millisecond), time.Since(closedAt).Round(time.Millisecond), testTTL, zktest.DefaultContainerCheckInterval)
}

// TestTTLNodeMadeAgain: someone deletes the child and the node; the node
// is made again and touched again.
func TestTTLNodeMadeAgain(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	obs := ens.Conn(t)
	p := root + "/svc"
	n := newTTL(t, c, p, []byte("v"), node.WithTouchName("alive"), node.WithTouchInterval(100*time.Millisecond))
	created(t, n)
	zktest.Eventually(t, 10*time.Second, "the child touched", func() error {
		if _, st := get(t, obs, p+"/alive"); st == nil {
			return errors.New("no child")
		}
		return nil
	})
	_, before := get(t, obs, p)
	for _, q := range []string{p + "/alive", p} {
		if err := obs.Delete(q, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("delete %s: %v", q, err)
		}
	}
	after := waitFor(t, obs, p, "v", 0, 10*time.Second)
	if after.Czxid == before.Czxid {
		t.Fatal("not made again")
	}
	zktest.Eventually(t, 10*time.Second, "the child touched again", func() error {
		if _, st := get(t, obs, p+"/alive"); st == nil {
			return errors.New("no child")
		}
		return nil
	})
}

// TestTTLNodesShared: two clients keep one TTL node; one closes, the other
// keeps it alive.
func TestTTLNodesShared(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c1, c2 := open(t, ens.Servers()), open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	p := root + "/svc"
	a := newTTL(t, c1, p, []byte("v"))
	b := newTTL(t, c2, p, []byte("v"), node.WithTouchInterval(testTTL/4))
	created(t, a)
	created(t, b)
	_, before := get(t, obs, p)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * testTTL) // several TTLs: the node would have gone without b
	if _, st := get(t, obs, p); st == nil || st.Czxid != before.Czxid {
		t.Fatalf("the node did not stay: %+v", st)
	}
}

// TestTTLUnsupported: servers without extended types refuse TTL nodes;
// WaitForInitialCreate says so at once, with what the servers need.
func TestTTLUnsupported(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t) // without WithExtendedTypes
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)
	n, err := node.NewTTL(c, "/svc", []byte("v"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	err = n.WaitForInitialCreate(ctx)
	if !errors.Is(err, connection.ErrTTLUnsupported) || !strings.Contains(err.Error(), "zookeeper.extendedTypesEnabled=true") {
		t.Fatalf("WaitForInitialCreate = %v, want ErrTTLUnsupported naming the option", err)
	}
	t.Logf("%v", err)
	if !errors.Is(n.Err(), connection.ErrTTLUnsupported) {
		t.Fatalf("Err = %v", n.Err())
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	conn := ens.Conn(t)
	if ok, _, err := conn.Exists("/svc"); err != nil || ok {
		t.Fatalf("a node was made: %v, %v", ok, err)
	}
}

// TestTTLNodeOptions: bad TTLs, touch names and intervals are refused.
func TestTTLNodeOptions(t *testing.T) {
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	for _, tc := range []struct {
		ttl  time.Duration
		opts []node.TTLOption
		want error
	}{
		{0, nil, connection.ErrInvalidOption},
		{time.Second + time.Microsecond, nil, connection.ErrInvalidOption},
		{time.Second, []node.TTLOption{node.WithTouchInterval(time.Second)}, connection.ErrInvalidOption},
		{time.Second, []node.TTLOption{node.WithTouchInterval(0)}, connection.ErrInvalidOption},
		{time.Second, []node.TTLOption{node.WithTouchName("")}, connection.ErrInvalidPath},
		{time.Second, []node.TTLOption{node.WithTouchName("a/b")}, connection.ErrInvalidPath},
		{time.Second, []node.TTLOption{node.WithTouchName("..")}, connection.ErrInvalidPath},
	} {
		if _, err := node.NewTTL(c, "/svc", nil, tc.ttl, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("NewTTL(%v, %d options) = %v, want %v", tc.ttl, len(tc.opts), err, tc.want)
		}
	}
	if _, err := node.NewTTL(c, "/svc", nil, 2*time.Millisecond); err != nil {
		t.Errorf("a 2ms TTL (1ms touches): %v", err)
	}
}

// TestTTLNodeOnContainer: Curator before 5.9 made a PersistentTtlNode's
// node a container. A TTLNode on such a node keeps it as it is, and keeps
// it alive by its child as well.
func TestTTLNodeOnContainer(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	obs := ens.Conn(t)
	p := root + "/svc"
	if _, err := obs.CreateContainer(p, []byte("curator"), zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, before := get(t, obs, p)
	n := newTTL(t, c, p, []byte("go"), node.WithTouchInterval(testTTL/4))
	created(t, n)
	after := waitFor(t, obs, p, "go", 0, 10*time.Second)
	if after.Czxid != before.Czxid {
		t.Fatal("made again instead of kept")
	}
	zktest.Eventually(t, 10*time.Second, "the child touched", func() error {
		if _, st := get(t, obs, p+"/touch"); st == nil {
			return errors.New("no child")
		}
		return nil
	})
	time.Sleep(3 * testTTL) // the server's checks come and go
	if _, st := get(t, obs, p); st == nil || st.Czxid != before.Czxid {
		t.Fatalf("the node went: %+v", st)
	}
}
