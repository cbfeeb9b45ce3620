package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	sharedvalue "github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

// The shared helpers, under the names these tests use.
var (
	open     = testkit.Open
	ctxFor   = testkit.Ctx
	closedCh = testkit.Closed
)

func newSem(t testing.TB, c *connection.Client, path string, max int, opts ...semaphore.Option) *semaphore.Semaphore {
	t.Helper()
	s, err := semaphore.New(c, path, max, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// leaseNodes counts the lease nodes on the server.
func leaseNodes(t testing.TB, obs *zk.Conn, path string) int {
	t.Helper()
	kids, _, err := obs.Children(path + "/leases")
	if errors.Is(err, zk.ErrNoNode) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(kids)
}

func TestNewRefusesBadInput(t *testing.T) {
	if _, err := semaphore.New(nil, "/s", 1); err == nil {
		t.Fatal("nil client accepted")
	}
	c := &connection.Client{}
	if _, err := semaphore.New(c, "rel", 1); !errors.Is(err, connection.ErrInvalidPath) {
		t.Fatalf("relative path: %v", err)
	}
	for _, n := range []int{0, -1} {
		if _, err := semaphore.New(c, "/s", n); !errors.Is(err, connection.ErrInvalidOption) {
			t.Fatalf("max %d: %v", n, err)
		}
	}
	if _, err := semaphore.New(c, "/s", 1, semaphore.WithSharedCount("bad")); !errors.Is(err, connection.ErrInvalidPath) {
		t.Fatalf("bad count path: %v", err)
	}
}

func TestTryAcquireAndRelease(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	ctx := ctxFor(t, 30*time.Second)
	s := newSem(t, open(t, ens.Servers()), path, 2)
	other := newSem(t, open(t, ens.Servers()), path, 2)
	if _, err := s.Acquire(ctx, 3); !errors.Is(err, semaphore.ErrTooMany) {
		t.Fatalf("3 of 2 = %v, want ErrTooMany", err)
	}
	if _, err := s.Acquire(ctx, 0); !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("0 leases = %v", err)
	}
	leases, err := s.Acquire(ctx, 2)
	if err != nil || len(leases) != 2 {
		t.Fatalf("Acquire 2 = %v, %v", leases, err)
	}
	if leases[1].Token() <= leases[0].Token() {
		t.Fatalf("tokens %d then %d", leases[0].Token(), leases[1].Token())
	}
	if _, err := other.TryAcquire(ctx, 1); !errors.Is(err, semaphore.ErrNoLeases) {
		t.Fatalf("TryAcquire when full = %v, want ErrNoLeases", err)
	}
	if err := leases[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leases[0].Release(ctx); !errors.Is(err, semaphore.ErrReleased) {
		t.Fatalf("second Release = %v, want ErrReleased", err)
	}
	got, err := other.TryAcquire(ctx, 1)
	if err != nil {
		t.Fatalf("TryAcquire after a release: %v", err)
	}
	for _, l := range append(got, leases[1]) {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := leaseNodes(t, ens.Conn(t), path); n != 0 {
		t.Fatalf("%d lease nodes left", n)
	}
}

// TestLimitNeverExceeded: 10 clients take one or two leases at a time,
// over and over, from a semaphore of 3. The checker never sees more than 3
// leases granted at once. On the server, the lease directory holds the
// granted leases plus the nodes of the one participant acquiring (it holds
// the locks mutex, its nodes wait to be counted in): never more than 3 + 2.
func TestLimitNeverExceeded(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	ctx := ctxFor(t, 2*time.Minute)
	obs := ens.Conn(t)
	const clients, rounds, max = 10, 15, 3
	var (
		mu           sync.Mutex
		inside, peak int
		grants       int
		serverPeak   int
		wg           sync.WaitGroup
	)
	errs := make(chan error, clients)
	for i := range clients {
		s := newSem(t, open(t, ens.Servers()), path, max)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				n := 1 + (i+r)%2 // one or two leases
				leases, err := s.Acquire(ctx, n)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				inside += n
				peak = max2(peak, inside)
				grants++
				mu.Unlock()
				kids, _, err := obs.Children(path + "/leases")
				if err == nil {
					mu.Lock()
					serverPeak = max2(serverPeak, len(kids))
					mu.Unlock()
				}
				time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
				mu.Lock()
				inside -= n
				mu.Unlock()
				for _, l := range leases {
					if err := l.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if peak > max || serverPeak > max+2 {
		t.Fatalf("%d leases held at once by the checker's count (max %d), %d nodes on the server (max %d + 2 being acquired)", peak, max, serverPeak, max)
	}
	t.Logf("%d grants; at most %d leases at once (server: %d nodes)", grants, peak, serverPeak)
}

func max2(a, b int) int { return max(a, b) }

// TestAllOrNone: two leases asked when one is free; the call times out
// and leaves no lease node behind.
func TestAllOrNone(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	ctx := ctxFor(t, 30*time.Second)
	holder := newSem(t, open(t, ens.Servers()), path, 3)
	held, err := holder.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := newSem(t, open(t, ens.Servers()), path, 3)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = s.Acquire(short, 2)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire 2 with 1 free = %v, want DeadlineExceeded", err)
	}
	obs := ens.Conn(t)
	zktest.Eventually(t, 10*time.Second, "only the holder's leases remain", func() error {
		if n := leaseNodes(t, obs, path); n != 2 {
			return fmt.Errorf("%d lease nodes", n)
		}
		return nil
	})
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCancelledAcquiresLeaveNoLease is CURATOR-462's scenario: acquires
// cancelled at random moments while the semaphore is full leave no lease
// node behind.
func TestCancelledAcquiresLeaveNoLease(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	ctx := ctxFor(t, time.Minute)
	holder := newSem(t, open(t, ens.Servers()), path, 1)
	held, err := holder.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := ens.Proxy(t)
	s := newSem(t, open(t, p.Servers()), path, 1)
	p.Delay(time.Millisecond)
	for i := range 200 {
		d := time.Duration(i%20) * 500 * time.Microsecond
		actx, cancel := context.WithTimeout(ctx, d)
		if _, err := s.Acquire(actx, 1); err == nil {
			t.Fatal("Acquire succeeded on a full semaphore")
		}
		cancel()
	}
	p.Restore()
	obs := ens.Conn(t)
	zktest.Eventually(t, 15*time.Second, "only the holder's lease remains", func() error {
		if n := leaseNodes(t, obs, path); n != 1 {
			return fmt.Errorf("%d lease nodes", n)
		}
		return nil
	})
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSharedCountWakesWaiter: a waiter on a full semaphore acquires when
// the shared count grows, without any lease being released.
func TestSharedCountWakesWaiter(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	path, count := root+"/sem", root+"/count"
	ctx := ctxFor(t, 30*time.Second)
	a := newSem(t, open(t, ens.Servers()), path, 1, semaphore.WithSharedCount(count))
	held, err := a.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := ens.Conn(t).Get(count)
	if err != nil || len(data) != 4 || data[3] != 1 {
		t.Fatalf("seeded count node %v, %v; want 4 bytes holding 1", data, err)
	}
	b := newSem(t, open(t, ens.Servers()), path, 1, semaphore.WithSharedCount(count))
	got := make(chan error, 1)
	go func() {
		leases, err := b.Acquire(ctx, 1)
		if err == nil {
			err = leases[0].Release(ctx)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("acquired beyond the count: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := a.SetCount(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSharedCountCorrupt: a count node that is not 4 bytes long fails
// the acquire, matching ErrBadCount and shared.ErrCorrupt, and leaves no
// lease; an empty one (Kazoo's ensure_path) is a maximum of 0.
func TestSharedCountCorrupt(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	path, count := root+"/sem", root+"/count"
	conn := ens.Conn(t)
	if _, err := conn.Create(count, []byte{1, 2, 3}, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)
	s := newSem(t, open(t, ens.Servers()), path, 1, semaphore.WithSharedCount(count))
	if _, err := s.Acquire(ctx, 1); !errors.Is(err, semaphore.ErrBadCount) || !errors.Is(err, sharedvalue.ErrCorrupt) {
		t.Fatalf("Acquire on a 3-byte count = %v", err)
	}
	if _, err := conn.Set(count, nil, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryAcquire(ctx, 1); !errors.Is(err, semaphore.ErrNoLeases) {
		t.Fatalf("TryAcquire on an empty count = %v, want ErrNoLeases", err)
	}
	if kids, _, err := conn.Children(path + "/leases"); err != nil || len(kids) != 0 {
		t.Fatalf("leases left: %v, %v", kids, err)
	}
}

// TestLostSessionFreesLeases: a holder cut off loses its lease — its Done
// closes before another participant is granted it, and Release says so —
// and a closed client frees its lease at once.
func TestLostSessionFreesLeases(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	ctx := ctxFor(t, 30*time.Second)
	p := ens.Proxy(t)
	a := newSem(t, open(t, p.Servers(), connection.WithSessionTimeout(time.Second)), path, 1)
	held, err := a.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	bc := open(t, ens.Servers())
	b := newSem(t, bc, path, 1)
	granted := make(chan bool, 1)
	var bLeases []*semaphore.Lease
	go func() {
		var err error
		bLeases, err = b.Acquire(ctx, 1)
		if err != nil {
			t.Error(err)
		}
		granted <- closedCh(held[0].Done())
	}()
	p.Blackhole()
	if !<-granted {
		t.Fatal("another participant was granted the lease while the holder's Done was open")
	}
	p.Restore()
	if err := held[0].Release(ctx); !errors.Is(err, semaphore.ErrLeaseLost) {
		t.Fatalf("Release of a lost lease = %v, want ErrLeaseLost", err)
	}

	// A closed client frees its lease at once: a waiter gets it.
	cc := open(t, ens.Servers())
	c := newSem(t, cc, path, 1)
	waiting := make(chan error, 1)
	go func() {
		leases, err := c.Acquire(ctx, 1)
		if err == nil {
			err = leases[0].Release(ctx)
		}
		waiting <- err
	}()
	select {
	case err := <-waiting:
		t.Fatalf("acquired while another client holds the only lease: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	bc.Close() // the holder's client, with its lease
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	if err := bLeases[0].Release(ctx); !errors.Is(err, semaphore.ErrLeaseLost) {
		t.Fatalf("Release after Close = %v, want ErrLeaseLost", err)
	}
}

// TestMutexIsNotReentrant: the semaphore-backed mutex excludes another
// participant, refuses a second Lock of its own (Curator's
// InterProcessSemaphoreMutex), and is usable again after Unlock.
func TestMutexIsNotReentrant(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sm"
	ctx := ctxFor(t, 30*time.Second)
	m, other := newMutex(t, path), newMutex(t, path)
	if _, err := semaphore.NewMutex(newSem(t, open(t, ens.Servers()), path, 2)); err == nil {
		t.Fatal("a mutex on a semaphore of 2 accepted")
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); !errors.Is(err, semaphore.ErrHeld) {
		t.Fatalf("second Lock = %v, want ErrHeld", err)
	}
	if err := other.TryLock(ctx); !errors.Is(err, semaphore.ErrLocked) {
		t.Fatalf("other's TryLock = %v, want ErrLocked", err)
	}
	if m.Token() == 0 || closedCh(m.Done()) {
		t.Fatal("the hold has no token or a closed Done")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, semaphore.ErrNotLocked) {
		t.Fatalf("second Unlock = %v, want ErrNotLocked", err)
	}
	if err := other.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
