// Package bench measures the locks side by side on one ensemble: the
// zkrecipes mutex and naive lock, go-zookeeper's zk.Lock, and the raw
// floor (the requests of a lock with no lock logic). Every participant has
// a session of its own. Both `go test -bench` and cmd/zkbench run these
// scenarios.
package bench

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
)

// Participant is one contender with its own session.
type Participant interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Close()
}

// Impl is a lock implementation under test: participants in this process
// (New), or a peer's driver in a child process (Curator, Kazoo).
type Impl struct {
	Name string
	// Exclusive is false for the raw floor, which takes no lock.
	Exclusive bool
	New       func(ctx context.Context, servers []string, lockPath string) (Participant, error)
	peer      *peer
}

// Impls returns the implementations compared by default.
func Impls() []Impl {
	return []Impl{
		{Name: "mutex", Exclusive: true, New: newMutex},
		{Name: "naive", Exclusive: true, New: newNaive},
		{Name: "zk.Lock", Exclusive: true, New: newZKLock},
		{Name: "raw floor", Exclusive: false, New: newRaw},
	}
}

// ByName returns the named implementations, from Impls and Peers.
func ByName(names ...string) ([]Impl, error) {
	var out []Impl
	for _, n := range names {
		found := false
		for _, i := range append(Impls(), Peers()...) {
			if i.Name == n {
				out, found = append(out, i), true
			}
		}
		if !found {
			return nil, fmt.Errorf("bench: no implementation %q", n)
		}
	}
	return out, nil
}

const sessionTimeout = 10 * time.Second

func openClient(ctx context.Context, servers []string) (*connection.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return connection.Open(ctx, servers, connection.WithSessionTimeout(sessionTimeout))
}

// zkrecipes locks.

type recipe struct {
	c *connection.Client
	l interface {
		Lock(context.Context) error
		Unlock(context.Context) error
	}
}

func (r *recipe) Lock(ctx context.Context) error   { return r.l.Lock(ctx) }
func (r *recipe) Unlock(ctx context.Context) error { return r.l.Unlock(ctx) }
func (r *recipe) Close()                           { r.c.Close() }

func newMutex(ctx context.Context, servers []string, lockPath string) (Participant, error) {
	c, err := openClient(ctx, servers)
	if err != nil {
		return nil, err
	}
	m, err := mutex.New(c, lockPath)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &recipe{c: c, l: m}, nil
}

func newNaive(ctx context.Context, servers []string, lockPath string) (Participant, error) {
	c, err := openClient(ctx, servers)
	if err != nil {
		return nil, err
	}
	l, err := naive.New(c, path.Join(lockPath, "lock"))
	if err != nil {
		c.Close()
		return nil, err
	}
	return &recipe{c: c, l: l}, nil
}

// Plain go-zookeeper sessions: zk.Lock and the raw floor.

type plain struct{ conn *zk.Conn }

func openPlain(servers []string) (*plain, error) {
	conn, err := zkserver.Connect(servers, sessionTimeout)
	if err != nil {
		return nil, err
	}
	return &plain{conn: conn}, nil
}

func (p *plain) Close() { p.conn.Close() }

type zkLock struct {
	*plain
	l *zk.Lock
}

func newZKLock(_ context.Context, servers []string, lockPath string) (Participant, error) {
	p, err := openPlain(servers)
	if err != nil {
		return nil, err
	}
	return &zkLock{plain: p, l: zk.NewLock(p.conn, lockPath, zk.WorldACL(zk.PermAll))}, nil
}

// zk.Lock takes no context: its calls run to the end.
func (z *zkLock) Lock(context.Context) error   { return z.l.Lock() }
func (z *zkLock) Unlock(context.Context) error { return z.l.Unlock() }

// raw is the floor: the requests an uncontended lock needs — create an
// ephemeral-sequential node, list the directory, delete the node — one
// after another, with no lock logic.
type raw struct {
	*plain
	dir  string
	node string
}

func newRaw(_ context.Context, servers []string, lockPath string) (Participant, error) {
	p, err := openPlain(servers)
	if err != nil {
		return nil, err
	}
	_, err = p.conn.Create(lockPath, nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		p.Close()
		return nil, err
	}
	return &raw{plain: p, dir: lockPath}, nil
}

func (r *raw) Lock(context.Context) error {
	node, err := r.conn.Create(r.dir+"/lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		return err
	}
	r.node = node
	_, _, err = r.conn.Children(r.dir)
	return err
}

func (r *raw) Unlock(context.Context) error { return r.conn.Delete(r.node, -1) }
