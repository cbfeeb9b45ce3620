package zktest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// RootPrefix is the znode under which Root creates each test's root.
const RootPrefix = "/zktest"

// Shared is one ensemble for a whole test package, started on first use
// and stopped when the package's tests end.
//
//	var zk = zktest.NewShared(zktest.WithServers(3))
//
//	func TestMain(m *testing.M) { os.Exit(zk.Run(m)) }
//
// With goleak, wrap the testing.M so that the ensemble is closed before the
// leak check: goleak.VerifyTestMain(zk.Wrap(m)).
type Shared struct {
	opts []Option

	once sync.Once
	ens  *Ensemble
	err  error
}

// NewShared returns a Shared ensemble that starts with opts on first use.
func NewShared(opts ...Option) *Shared { return &Shared{opts: opts} }

// Ensemble returns the package's ensemble, starting it on the first call.
// In -short mode it skips the test; if the ensemble cannot start, every
// test that asks for it fails with the reason.
func (s *Shared) Ensemble(t testing.TB) *Ensemble {
	t.Helper()
	SkipIfShort(t)
	s.once.Do(func() { s.ens, s.err = New(s.opts...) })
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.ens
}

// Run runs the tests and then stops the ensemble, returning m.Run's code.
func (s *Shared) Run(m *testing.M) int { return s.Wrap(m).Run() }

// Wrap returns a testing.M-like value whose Run runs the tests and then
// stops the ensemble.
func (s *Shared) Wrap(m interface{ Run() int }) interface{ Run() int } {
	return runFunc(func() int {
		code := m.Run()
		s.once.Do(func() { s.err = ErrClosed }) // never start after the tests
		if s.ens != nil {
			if err := s.ens.Close(); err != nil {
				fmt.Printf("zktest: close shared ensemble: %v\n", err)
			}
		}
		return code
	})
}

type runFunc func() int

func (f runFunc) Run() int { return f() }

// Root creates a znode of the test's own under RootPrefix, such as
// "/zktest/TestLock_fair-3fa2c1", and deletes it with everything under it
// when the test ends. Tests that each work under their own root can share
// an ensemble and run in parallel.
func (e *Ensemble) Root(t testing.TB) string {
	t.Helper()
	conn, err := e.admin.get(e.Servers())
	if err != nil {
		t.Fatalf("zktest: connect to create a test root: %v", err)
	}
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + hex.EncodeToString(suffix[:])
	root := path.Join(RootPrefix, name)
	if err := createAll(conn, root); err != nil {
		t.Fatalf("zktest: create test root %s: %v", root, err)
	}
	t.Cleanup(func() {
		// The ensemble's session of the moment: a replaced database
		// (RestoreBackup, WipeDatabase) ends the one that made the root.
		conn, err := e.admin.get(e.Servers())
		if err != nil {
			t.Logf("zktest: connect to delete test root %s: %v", root, err)
			return
		}
		if err := deleteAll(conn, root); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Logf("zktest: delete test root %s: %v", root, err)
		}
	})
	return root
}

// adminConn is the ensemble's own session, used to create and delete test
// roots. It connects on first use.
type adminConn struct {
	mu   sync.Mutex
	conn *zk.Conn
}

func (a *adminConn) get(servers []string) (*zk.Conn, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		return a.conn, nil
	}
	conn, err := Connect(servers, 10*time.Second)
	if err != nil {
		return nil, err
	}
	a.conn = conn
	return conn, nil
}

func (a *adminConn) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
}

// Connect opens a plain go-zookeeper session to servers, with its logging
// silenced, and waits until the session exists (at most 10 s). Tests use it
// to look at what a recipe left in ZooKeeper.
func Connect(servers []string, sessionTimeout time.Duration, opts ...func(*zk.Conn)) (*zk.Conn, error) {
	return zkserver.Connect(servers, sessionTimeout, opts...)
}

func createAll(conn *zk.Conn, p string) error {
	cur := ""
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// deleteAll deletes p and everything below it, depth first.
func deleteAll(conn *zk.Conn, p string) error {
	children, _, err := conn.Children(p)
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := deleteAll(conn, path.Join(p, c)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return conn.Delete(p, -1)
}
