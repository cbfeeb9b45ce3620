package node_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The package's servers create TTL nodes; TestTTLUnsupported starts its
// own without.
var shared = zktest.NewShared(zktest.WithExtendedTypes())

func TestMain(m *testing.M) { testkit.Main(m, shared) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed

	wantGuardFailed = testkit.WantGuardFailed
)

// newNode returns a started Node, closed when the test ends.
func newNode(t testing.TB, c *connection.Client, p string, data []byte, opts ...node.Option) *node.Node {
	t.Helper()
	n, err := node.New(c, p, data, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(ctxFor(t, 10*time.Second)) })
	return n
}

// created waits for the node's first presence.
func created(t testing.TB, n interface {
	WaitForInitialCreate(ctx context.Context) error
}) {
	t.Helper()
	if err := n.WaitForInitialCreate(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// createdNode is newNode, returned once its node was first created.
func createdNode(t testing.TB, c *connection.Client, p string, data []byte, opts ...node.Option) *node.Node {
	t.Helper()
	n := newNode(t, c, p, data, opts...)
	created(t, n)
	return n
}

// kids lists dir from the observer's session, sorted; none if dir is gone.
func kids(t testing.TB, conn *zk.Conn, dir string) []string {
	t.Helper()
	ks, _, err := conn.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	sort.Strings(ks)
	return ks
}

// get reads p from the observer's session: its data and Stat, or nil
// when it is gone.
func get(t testing.TB, conn *zk.Conn, p string) ([]byte, *zk.Stat) {
	t.Helper()
	data, stat, err := conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		t.Fatalf("get %s: %v", p, err)
	}
	return data, stat
}

// waitFor polls the observer until p holds want, owned by owner (-1:
// any), or fails after timeout.
func waitFor(t testing.TB, conn *zk.Conn, p string, want string, owner int64, timeout time.Duration) *zk.Stat {
	t.Helper()
	var stat *zk.Stat
	zktest.Eventually(t, timeout, fmt.Sprintf("%s holds %q", p, want), func() error {
		var data []byte
		data, stat = get(t, conn, p)
		switch {
		case stat == nil:
			return errors.New("no node")
		case string(data) != want:
			return fmt.Errorf("data %q", data)
		case owner >= 0 && stat.EphemeralOwner != owner:
			return fmt.Errorf("owner %#x, want %#x", stat.EphemeralOwner, owner)
		}
		return nil
	})
	return stat
}
