package lockcore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

// The shared helpers, under the names these tests use.
var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
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
		Data:      connx.Of(c).DefaultData(),
		Accept:    lockcore.MutexKinds,
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
	return lockcore.Participants(ctx, l.client, l.path, lockcore.MutexKinds)
}
