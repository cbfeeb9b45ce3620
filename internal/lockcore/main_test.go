package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

// The shared helpers, under the names these tests use.
var (
	open          = testkit.Open
	ctxFor        = testkit.Ctx
	closed        = testkit.Closed
	countingProxy = testkit.CountingProxy
)

// The sentinels of the locks these tests build.
var (
	errLocked    = errors.New("lock: locked by another participant")
	errNotLocked = errors.New("lock: not locked")
	errLockLost  = errors.New("lock: lock lost")
	errUnlocked  = errors.New("lock: unlocked")
)

// testLock is an exclusive, reentrant lock built on the core as a recipe
// builds one (Curator's lock-node layout, a Holder over a Lock): what
// these tests of the core's mechanisms contend with.
type testLock struct {
	*lockcore.Holder
	client *connection.Client
	path   string
}

// newLock returns a lock at path on c.
func newLock(t testing.TB, c *connection.Client, path string) *testLock {
	t.Helper()
	if err := connection.ValidatePath(path); err != nil {
		t.Fatal(err)
	}
	core := &lockcore.Lock{
		Client:    c,
		Dir:       path,
		Name:      "lock-",
		Data:      c.DefaultData(),
		Accept:    layout.MutexKinds,
		Predicate: lockcore.Exclusive,
		Window:    2,
		Recipe:    "lock",
	}
	h := lockcore.NewHolder(c, lockcore.HolderConfig{
		Name:         "lock",
		Path:         path,
		Core:         core,
		Release:      core.Release,
		ErrLocked:    errLocked,
		ErrNotLocked: errNotLocked,
		ErrLockLost:  errLockLost,
		ErrUnlocked:  errUnlocked,
	})
	return &testLock{Holder: h, client: c, path: path}
}

// Lock takes the lock, waiting for it.
func (l *testLock) Lock(ctx context.Context) error { return l.Holder.Lock(ctx, true) }

// TryLock takes the lock if no other contender holds it.
func (l *testLock) TryLock(ctx context.Context) error { return l.Holder.Lock(ctx, false) }

// Participants lists the lock's contenders in line order.
func (l *testLock) Participants(ctx context.Context) ([]lockcore.Participant, error) {
	return lockcore.Participants(ctx, l.client, l.path, layout.MutexKinds)
}

// waitNodes waits up to d until the lock directory dir, read through obs,
// holds n nodes (for n = 0, or is gone); what names the wait.
func waitNodes(t testing.TB, obs *zk.Conn, dir string, n int, d time.Duration, what string) {
	t.Helper()
	zktest.Eventually(t, d, what, func() error {
		kids, _, err := obs.Children(dir)
		if err != nil && (n != 0 || !errors.Is(err, zk.ErrNoNode)) {
			return err
		}
		if len(kids) != n {
			return fmt.Errorf("%d nodes, want %d: %v", len(kids), n, kids)
		}
		return nil
	})
}

// lockUntil starts m.Lock(ctx) and waits until seen is closed (the step of
// the Lock that the test acts on was seen on the wire), failing with what
// if it is not within 20 s. It returns the channel of Lock's answer.
func lockUntil(t testing.TB, ctx context.Context, m *testLock, seen <-chan struct{}, what string) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- m.Lock(ctx) }()
	select {
	case <-seen:
	case <-time.After(20 * time.Second):
		t.Fatal(what)
	}
	return errc
}

// otherNode waits up to d until the lock directory dir, read through obs,
// holds a node other than known (paths), and returns its path; what names
// the wait.
func otherNode(t testing.TB, obs *zk.Conn, dir string, d time.Duration, what string, known ...string) string {
	t.Helper()
	var node string
	zktest.Eventually(t, d, what, func() error {
		kids, _, err := obs.Children(dir)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if n := path.Join(dir, k); !slices.Contains(known, n) {
				node = n
				return nil
			}
		}
		return fmt.Errorf("contenders %v", kids)
	})
	return node
}

// waiterBehindProxy is the set-up of a test that makes faults on a
// waiter's link: an observer's connection to ens, a holder's client on
// ens, a waiter's client, whose session timeout is timeout, through a
// counting proxy, and that proxy.
func waiterBehindProxy(t testing.TB, ens *zktest.Ensemble, timeout time.Duration) (obs *zk.Conn, hc, wc *connection.Client, p *zkserver.Proxy) {
	t.Helper()
	p = countingProxy(t, ens.Servers())
	return ens.Conn(t), open(t, ens.Servers()), open(t, p.Servers(), connection.WithSessionTimeout(timeout)), p
}

// heldInKeptDir returns a lock at path on hc, locked, and one on wc, with
// a node beside their contenders ("keep", no contender) that keeps the
// directory, a container, from going when the contenders are deleted.
func heldInKeptDir(t testing.TB, ctx context.Context, obs *zk.Conn, hc, wc *connection.Client, path string) (h, w *testLock) {
	t.Helper()
	h, w = newLock(t, hc, path), newLock(t, wc, path)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(path+"/keep", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return h, w
}
