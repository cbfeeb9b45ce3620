package misuse_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/lease"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	sharedvalue "github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared) }

// badPaths are paths every constructor must refuse with ErrInvalidPath.
var badPaths = map[string]string{
	"empty":           "",
	"relative":        "locks/a",
	"trailing slash":  "/locks/a/",
	"empty component": "/locks//a",
	"dot":             "/locks/./a",
	"dot dot":         "/locks/../a",
	"NUL":             "/locks/a\x00b",
	"control":         "/locks/a\x01b",
	"DEL":             "/locks/a\x7fb",
	"surrogate area":  "/locks/a\ue000b",
	"not UTF-8":       "/locks/\xff",
	"over-long":       "/" + strings.Repeat("x", connection.MaxPathLength),
	"root":            "/",
}

// constructors are every New of the library, with a client and a path.
var constructors = map[string]func(c *connection.Client, p string) error{
	"mutex.New":     func(c *connection.Client, p string) error { _, err := mutex.New(c, p); return err },
	"naive.New":     func(c *connection.Client, p string) error { _, err := naive.New(c, p); return err },
	"rwlock.New":    func(c *connection.Client, p string) error { _, err := rwlock.New(c, p); return err },
	"semaphore.New": func(c *connection.Client, p string) error { _, err := semaphore.New(c, p, 2); return err },
	"election.New":  func(c *connection.Client, p string) error { _, err := election.New(c, p, "id"); return err },
	"queue.New":     func(c *connection.Client, p string) error { _, err := queue.New(c, p); return err },
	"curatorqueue.New": func(c *connection.Client, p string) error {
		_, err := curatorqueue.New(c, p)
		return err
	},
	"curatorqueue.NewID": func(c *connection.Client, p string) error {
		_, err := curatorqueue.NewID(c, p)
		return err
	},
	"curatorqueue.NewSimple": func(c *connection.Client, p string) error {
		_, err := curatorqueue.NewSimple(c, p)
		return err
	},
	"curatorqueue.WithLockPath": func(c *connection.Client, p string) error {
		_, err := curatorqueue.New(c, "/q", curatorqueue.WithLockPath(p))
		return err
	},
	"node.New": func(c *connection.Client, p string) error { _, err := node.New(c, p, nil); return err },
	"node.NewTTL": func(c *connection.Client, p string) error {
		_, err := node.NewTTL(c, p, nil, time.Minute)
		return err
	},
	"mutex.Participants": func(c *connection.Client, p string) error {
		_, err := mutex.Participants(context.Background(), c, p)
		return err
	},
	"rwlock.Participants": func(c *connection.Client, p string) error {
		_, err := rwlock.Participants(context.Background(), c, p)
		return err
	},
	"semaphore.Leases": func(c *connection.Client, p string) error {
		_, err := semaphore.Leases(context.Background(), c, p)
		return err
	},
	"semaphore.WithSharedCount": func(c *connection.Client, p string) error {
		_, err := semaphore.New(c, "/sem", 1, semaphore.WithSharedCount(p))
		return err
	},
	"mutex.Revoke": func(c *connection.Client, p string) error { return mutex.Revoke(context.Background(), c, p) },
	"barrier.New": func(c *connection.Client, p string) error {
		_, err := barrier.New(c, p)
		return err
	},
	"barrier.NewDouble": func(c *connection.Client, p string) error {
		_, err := barrier.NewDouble(c, p, 2)
		return err
	},
	"shared.NewValue": func(c *connection.Client, p string) error {
		_, err := sharedvalue.NewValue(c, p, nil)
		return err
	},
	"shared.NewCount": func(c *connection.Client, p string) error {
		_, err := sharedvalue.NewCount(c, p, 0)
		return err
	},
	"shared.NewCounter": func(c *connection.Client, p string) error {
		_, err := sharedvalue.NewCounter(c, p)
		return err
	},
	"lease.Obtain": func(c *connection.Client, p string) error {
		_, err := lease.Obtain(context.Background(), c, p, time.Minute)
		return err
	},
	"lease.ObtainOneOf": func(c *connection.Client, p string) error {
		_, err := lease.ObtainOneOf(context.Background(), c, p, 2, time.Minute)
		return err
	},
	"lease.Current": func(c *connection.Client, p string) error {
		_, err := lease.Current(context.Background(), c, p)
		return err
	},
	"watch.New": func(c *connection.Client, p string) error {
		_, err := watch.New(context.Background(), c, p)
		return err
	},
	"shared.WithPromotedLock": func(c *connection.Client, p string) error {
		if p == "/" {
			return connection.ErrInvalidPath // a lock at the root is a lock: no error is right here
		}
		_, err := sharedvalue.NewCounter(c, "/counter", sharedvalue.WithPromotedLock(p, nil))
		return err
	},
}

// TestConstructorsRefuseBadInput: every constructor refuses every bad path
// with ErrInvalidPath (the root too: it cannot be a lock), and a nil
// client with ErrInvalidOption, before any request.
func TestConstructorsRefuseBadInput(t *testing.T) {
	c := open(t)
	before := c.Stats().Replies
	for name, newFn := range constructors {
		for why, p := range badPaths {
			if why == "root" && (strings.HasSuffix(name, "Participants") || name == "semaphore.Leases" || name == "watch.New") {
				continue // listing or watching the root is allowed
			}
			err := call(func() error { return newFn(c, p) })
			if !errors.Is(err, connection.ErrInvalidPath) {
				t.Errorf("%s(%s path): %v, want ErrInvalidPath", name, why, err)
			}
		}
		if strings.HasSuffix(name, ".New") {
			if err := call(func() error { return newFn(nil, "/ok") }); !errors.Is(err, connection.ErrInvalidOption) {
				t.Errorf("%s(nil client): %v, want ErrInvalidOption", name, err)
			}
		}
	}
	for name, err := range map[string]error{
		"semaphore.New(0 leases)":      call(func() error { _, err := semaphore.New(c, "/s", 0); return err }),
		"semaphore.New(-1 leases)":     call(func() error { _, err := semaphore.New(c, "/s", -1); return err }),
		"semaphore.NewMutex(nil)":      call(func() error { _, err := semaphore.NewMutex(nil); return err }),
		"semaphore.NewMutex(2 leases)": call(func() error { s, _ := semaphore.New(c, "/s", 2); _, err := semaphore.NewMutex(s); return err }),
		"mutex.WithRevocation(nil)":    call(func() error { _, err := mutex.New(c, "/m", mutex.WithRevocation(nil)); return err }),
		"multilock.New()":              call(func() error { _, err := multilock.New(); return err }),
		"multilock.New(nil)":           call(func() error { _, err := multilock.New(nil); return err }),
		"election.New(empty id)":       call(func() error { _, err := election.New(c, "/e", ""); return err }),
		"queue.WithPriority(-1)": call(func() error {
			q, _ := queue.New(c, "/q")
			return q.Put(context.Background(), nil, queue.WithPriority(-1))
		}),
		"queue.WithPriority(1000)": call(func() error {
			q, _ := queue.New(c, "/q")
			return q.Put(context.Background(), nil, queue.WithPriority(1000))
		}),
		"connection.Open(no servers)": call(func() error { _, err := connection.Open(context.Background(), nil); return err }),
		"connection.WithSessionTimeout": call(func() error {
			_, err := connection.Open(context.Background(), []string{"x:1"}, connection.WithSessionTimeout(-1))
			return err
		}),
		"semaphore.Acquire(0)": call(func() error {
			s, _ := semaphore.New(c, "/s", 2)
			_, err := s.Acquire(context.Background(), 0)
			return err
		}),
		"semaphore.Acquire(more than max)": call(func() error {
			s, _ := semaphore.New(c, "/s", 2)
			_, err := s.Acquire(context.Background(), 3)
			return err
		}),
	} {
		want := map[string]error{
			"election.New(empty id)":           election.ErrInvalidID,
			"queue.WithPriority(-1)":           queue.ErrInvalidPriority,
			"queue.WithPriority(1000)":         queue.ErrInvalidPriority,
			"connection.Open(no servers)":      connection.ErrNoServers,
			"semaphore.Acquire(more than max)": semaphore.ErrTooMany,
		}[name]
		if want == nil {
			want = connection.ErrInvalidOption
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	if after := c.Stats().Replies; after != before {
		t.Logf("requests answered meanwhile: %d (pings)", after-before)
	}
}

// call runs f and turns a panic into a test failure's error.
func call(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

func open(t *testing.T, opts ...connection.Option) *connection.Client {
	return testkit.Open(t, shared.Ensemble(t).Servers(), opts...)
}

// lockLike is what every lock recipe offers.
type lockLike interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// locks makes one of each lock recipe on path.
func locks(t *testing.T, c *connection.Client, p string) map[string]lockLike {
	t.Helper()
	m, err := mutex.New(c, p+"/mutex")
	must(t, err)
	n, err := naive.New(c, p+"/naive")
	must(t, err)
	rw, err := rwlock.New(c, p+"/rw")
	must(t, err)
	s, err := semaphore.New(c, p+"/sem", 1)
	must(t, err)
	sm, err := semaphore.NewMutex(s)
	must(t, err)
	m2, err := mutex.New(c, p+"/multi-a")
	must(t, err)
	m3, err := mutex.New(c, p+"/multi-b")
	must(t, err)
	ml, err := multilock.New(m2, m3)
	must(t, err)
	return map[string]lockLike{
		"mutex": m, "naive": n, "rwlock read": rw.ReadLock(), "rwlock write": rw.WriteLock(),
		"semaphore mutex": sm, "multilock": ml,
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// notLocked is each recipe's Unlock-without-Lock sentinel.
var notLocked = map[string]error{
	"mutex": mutex.ErrNotLocked, "naive": naive.ErrNotLocked, "rwlock read": rwlock.ErrNotLocked,
	"rwlock write": rwlock.ErrNotLocked, "semaphore mutex": semaphore.ErrNotLocked, "multilock": multilock.ErrNotLocked,
}

// TestMisuseOfLocks: Unlock without Lock, a cancelled or expired context,
// and use after the client is closed, on every lock recipe — each a
// sentinel, with nothing left on the server.
func TestMisuseOfLocks(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t)
	ls := locks(t, c, root)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	ctx := testkit.Ctx(t, time.Minute)
	for name, l := range ls {
		if err := call(func() error { return l.Unlock(ctx) }); !errors.Is(err, notLocked[name]) {
			t.Errorf("%s: Unlock without Lock = %v, want %v", name, err, notLocked[name])
		}
		if err := call(func() error { return l.Lock(cancelled) }); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Lock(cancelled) = %v, want context.Canceled", name, err)
		}
		if err := call(func() error { return l.Lock(expired) }); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: Lock(expired) = %v, want DeadlineExceeded", name, err)
		}
	}
	noOrphans(t, ens, root)
	c.Close()
	for name, l := range ls {
		if err := call(func() error { return l.Lock(ctx) }); !errors.Is(err, connection.ErrClosed) {
			t.Errorf("%s: Lock after Close = %v, want ErrClosed", name, err)
		}
	}
	noOrphans(t, ens, root)
}

// TestMisuseOfLeasesTermsItems: a lease released twice, a term resigned
// twice, an item consumed twice, and each after the client is closed.
func TestMisuseOfLeasesTermsItems(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t)
	ctx := testkit.Ctx(t, time.Minute)

	s, err := semaphore.New(c, root+"/sem", 2)
	must(t, err)
	leases, err := s.Acquire(ctx, 1)
	must(t, err)
	must(t, leases[0].Release(ctx))
	if err := leases[0].Release(ctx); !errors.Is(err, semaphore.ErrReleased) {
		t.Errorf("Lease released twice: %v, want ErrReleased", err)
	}

	e, err := election.New(c, root+"/election", "me")
	must(t, err)
	term, err := e.Campaign(ctx)
	must(t, err)
	must(t, term.Resign(ctx))
	if err := term.Resign(ctx); !errors.Is(err, election.ErrResigned) {
		t.Errorf("Resign twice: %v, want ErrResigned", err)
	}

	q, err := queue.New(c, root+"/queue")
	must(t, err)
	must(t, q.Put(ctx, []byte("x")))
	it, err := q.TryTake(ctx)
	must(t, err)
	must(t, it.Consume(ctx))
	if err := it.Consume(ctx); !errors.Is(err, queue.ErrFinished) {
		t.Errorf("Consume twice: %v, want ErrFinished", err)
	}
	if err := it.Release(ctx); !errors.Is(err, queue.ErrFinished) {
		t.Errorf("Release after Consume: %v, want ErrFinished", err)
	}
	if _, err := q.TryTake(ctx); !errors.Is(err, queue.ErrEmpty) {
		t.Errorf("TryTake on an empty queue: %v, want ErrEmpty", err)
	}
	// Data beyond go-zookeeper's 1 MiB buffer: refused at once, before
	// anything is sent (the server would drop the connection).
	if err := call(func() error { return q.Put(ctx, make([]byte, 2<<20)) }); !errors.Is(err, connection.ErrDataTooLarge) {
		t.Errorf("Put of 2 MiB: %v, want connection.ErrDataTooLarge", err)
	}
	if _, err := e.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader with none: %v, want ErrNoLeader", err)
	}
	noOrphans(t, ens, root+"/sem/leases", root+"/election", root+"/queue/taken", root+"/queue/takers")

	counter, err := sharedvalue.NewCounter(c, root+"/counter")
	must(t, err)
	_, err = counter.Add(ctx, 1)
	must(t, err)
	value, err := sharedvalue.NewValue(c, root+"/value", nil)
	must(t, err)

	c.Close()
	for name, err := range map[string]error{
		"Counter.Add":  call(func() error { _, err := counter.Add(ctx, 1); return err }),
		"Counter.Get":  call(func() error { _, err := counter.Get(ctx); return err }),
		"Value.TrySet": call(func() error { _, err := value.TrySet(ctx, sharedvalue.Versioned[[]byte]{Version: -1}, nil); return err }),
		"Value.Watch":  call(func() error { _, err := value.Watch(ctx); return err }),
		"Acquire":      call(func() error { _, err := s.Acquire(ctx, 1); return err }),
		"Campaign":     call(func() error { _, err := e.Campaign(ctx); return err }),
		"Leader":       call(func() error { _, err := e.Leader(ctx); return err }),
		"Put":          call(func() error { return q.Put(ctx, []byte("y")) }),
		"Take":         call(func() error { _, err := q.Take(ctx); return err }),
		"TryTake":      call(func() error { _, err := q.TryTake(ctx); return err }),
		"Get":          call(func() error { _, _, err := c.Get(ctx, "/"); return err }),
	} {
		if !errors.Is(err, connection.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestServerErrors: a lock directory the client may not write (digest
// ACL: NoAuth) and an ephemeral node where a directory should be
// (NoChildrenForEphemerals): every recipe returns the server's sentinel
// at once — no hang, no retry loop, nothing left.
func TestServerErrors(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	admin := ens.Conn(t)
	if err := admin.AddAuth("digest", []byte("owner:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create(root+"/locked", nil, 0, zk.DigestACL(zk.PermAll, "owner", "secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create(root+"/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c := open(t)
	ctx := testkit.Ctx(t, time.Minute)
	for dir, want := range map[string]error{root + "/locked": zk.ErrNoAuth, root + "/eph": zk.ErrNoChildrenForEphemerals} {
		m, err := mutex.New(c, dir)
		must(t, err)
		rw, err := rwlock.New(c, dir)
		must(t, err)
		n, err := naive.New(c, dir+"/n") // its node is the path itself
		must(t, err)
		e, err := election.New(c, dir, "me")
		must(t, err)
		q, err := queue.New(c, dir)
		must(t, err)
		s, err := semaphore.New(c, dir, 1)
		must(t, err)
		for name, f := range map[string]func() error{
			"mutex.Lock":        func() error { return m.Lock(ctx) },
			"rwlock.Lock":       func() error { return rw.WriteLock().Lock(ctx) },
			"naive.Lock":        func() error { return n.Lock(ctx) },
			"election.Campaign": func() error { _, err := e.Campaign(ctx); return err },
			"queue.Put":         func() error { return q.Put(ctx, []byte("x")) },
			"queue.TryTake":     func() error { _, err := q.TryTake(ctx); return err },
			"semaphore.Acquire": func() error { _, err := s.Acquire(ctx, 1); return err },
		} {
			start := time.Now()
			err := call(f)
			if !errors.Is(err, want) {
				t.Errorf("%s on %s: %v, want %v", name, dir, err, want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s on %s took %v: a retry loop", name, dir, d)
			}
		}
	}
	if kids, _, err := admin.Children(root + "/locked"); err != nil || len(kids) != 0 {
		t.Errorf("left under the NoAuth directory: %v, %v", kids, err)
	}
}

// noOrphans checks that the directories under root hold no node.
func noOrphans(t *testing.T, ens *zktest.Ensemble, dirs ...string) {
	t.Helper()
	conn := ens.Conn(t)
	var walk func(p string) []string
	walk = func(p string) []string {
		kids, _, err := conn.Children(p)
		if err != nil {
			return nil
		}
		var out []string
		for _, k := range kids {
			out = append(out, p+"/"+k)
			out = append(out, walk(p+"/"+k)...)
		}
		return out
	}
	for _, d := range dirs {
		for _, n := range walk(d) {
			if ok, st, err := conn.Exists(n); err == nil && ok && st.EphemeralOwner != 0 {
				t.Errorf("ephemeral node left: %s", n)
			}
		}
	}
}

// TestFullDirectory: a directory with more children than a client with a
// bounded buffer (WithMaxBufferSize) can list. Every recipe that lists it
// returns ErrResponseTooLarge at once — not a retry loop that drops the
// connection again and again — and leaves nothing of its own there.
func TestFullDirectory(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	admin := ens.Conn(t)
	const kids, limit = 150, 4096 // 150 names of 40 bytes: about 6.6 KB to list
	fill := func(dir string) {
		t.Helper()
		for _, p := range []string{dir, dir + "/entries", dir + "/leases"} {
			if _, err := admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{dir, dir + "/entries", dir + "/leases"} {
			for i := range kids {
				name := fmt.Sprintf("%s/filler-%033d", p, i)
				if _, err := admin.Create(name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	c := open(t, connection.WithMaxBufferSize(limit))
	ctx := testkit.Ctx(t, time.Minute)
	for name, f := range map[string]func(dir string) error{
		"mutex.Lock": func(dir string) error {
			m, err := mutex.New(c, dir)
			must(t, err)
			return m.Lock(ctx)
		},
		"rwlock.Lock": func(dir string) error {
			rw, err := rwlock.New(c, dir)
			must(t, err)
			return rw.WriteLock().Lock(ctx)
		},
		"election.Campaign": func(dir string) error {
			e, err := election.New(c, dir, "me")
			must(t, err)
			_, err = e.Campaign(ctx)
			return err
		},
		"queue.TryTake": func(dir string) error {
			q, err := queue.New(c, dir)
			must(t, err)
			_, err = q.TryTake(ctx)
			return err
		},
		"semaphore.Acquire": func(dir string) error {
			s, err := semaphore.New(c, dir, 1)
			must(t, err)
			_, err = s.Acquire(ctx, 1)
			return err
		},
	} {
		dir := root + "/full-" + strings.ReplaceAll(name, ".", "-")
		fill(dir)
		start := time.Now()
		err := call(func() error { return f(dir) })
		if !errors.Is(err, connection.ErrResponseTooLarge) {
			t.Errorf("%s on a full directory: %v, want ErrResponseTooLarge", name, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %v: a retry loop", name, d)
		}
		t.Logf("%s: %v", name, err)
		for _, p := range []string{dir, dir + "/entries", dir + "/leases"} {
			got, _, err := admin.Children(p)
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, k := range got {
				if !strings.HasPrefix(k, "filler-") && k != "entries" && k != "leases" && k != "locks" && k != "taken" && k != "takers" {
					left = append(left, k)
				}
			}
			if len(left) > 0 {
				t.Errorf("%s left in %s: %v", name, p, left)
			}
		}
	}
}

// TestNilOptionIsRefused: a nil option is refused with ErrInvalidOption,
// naming the package once, never a panic — for every option type of the
// library.
func TestNilOptionIsRefused(t *testing.T) {
	c := open(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	root := shared.Ensemble(t).Root(t)
	q, err := queue.New(c, root+"/q")
	must(t, err)
	e, err := election.New(c, root+"/e", "id")
	must(t, err)
	t.Cleanup(func() { q.Close(context.Background()); e.Close(context.Background()) })
	d, err := discovery.New(c, root+"/services")
	must(t, err)
	for name, f := range map[string]func() error{
		"connection.Open": func() error { _, err := connection.Open(ctx, []string{"x:1"}, nil); return err },
		"connection.Create": func() error {
			_, err := c.Create(ctx, root+"/n", nil, connection.Persistent, nil)
			return err
		},
		"mutex.New":     func() error { _, err := mutex.New(c, root+"/m", nil); return err },
		"rwlock.New":    func() error { _, err := rwlock.New(c, root+"/rw", nil); return err },
		"semaphore.New": func() error { _, err := semaphore.New(c, root+"/s", 1, nil); return err },
		"election.New":  func() error { _, err := election.New(c, root+"/e2", "id", nil); return err },
		"election.Run": func() error {
			return e.Run(ctx, func(context.Context, *election.Term) error { return nil }, nil)
		},
		"queue.New": func() error { _, err := queue.New(c, root+"/q2", nil); return err },
		"queue.Put": func() error { return q.Put(ctx, nil, nil) },
		"node.New":  func() error { _, err := node.New(c, root+"/n", nil, nil); return err },
		"node.NewTTL": func() error {
			_, err := node.NewTTL(c, root+"/t", nil, time.Minute, nil)
			return err
		},
		"cache.New":    func() error { _, err := cache.New(c, root+"/c", nil); return err },
		"watch.New":    func() error { _, err := watch.New(ctx, c, root+"/w", nil); return err },
		"cache.Listen": func() error { return cacheListen(ctx, c, root+"/c2") },
		"group.New":    func() error { _, err := group.New(c, root+"/g", "m", nil); return err },
		"partition.New": func() error {
			_, err := partition.New(c, root+"/p", []string{"a"}, nil)
			return err
		},
		"discovery.Register": func() error {
			_, err := d.Register(ctx, discovery.Instance{Name: "s", ID: "i"}, nil)
			return err
		},
		"discovery.Cache":    func() error { _, err := d.Cache("s", nil); return err },
		"discovery.Provider": func() error { _, err := d.Provider(ctx, "s", nil); return err },
		"shared.NewCounter": func() error {
			_, err := sharedvalue.NewCounter(c, root+"/k", nil)
			return err
		},
	} {
		err := call(f)
		if !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("%s with a nil option: %v, want ErrInvalidOption", name, err)
			continue
		}
		pkg := strings.SplitN(name, ".", 2)[0]
		if n := strings.Count(err.Error(), pkg+":"); n != 1 {
			t.Errorf("%s with a nil option: %q names %q %d times, want once", name, err, pkg, n)
		}
	}
}

// cacheListen makes a cache and listens with a nil option.
func cacheListen(ctx context.Context, c *connection.Client, p string) error {
	ca, err := cache.New(c, p)
	if err != nil {
		return err
	}
	defer ca.Close()
	_, err = ca.Listen(ctx, nil)
	return err
}
