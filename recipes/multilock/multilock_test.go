package multilock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared) }

// The shared helpers, under the names these tests use.
var (
	open     = testkit.Open
	closedCh = testkit.Closed
)

func mu(t testing.TB, c *connection.Client, p string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Every lock recipe is a Lock.
var (
	_ multilock.Lock = (*mutex.Mutex)(nil)
	_ multilock.Lock = (*rwlock.Side)(nil)
	_ multilock.Lock = (*naive.Lock)(nil)
	_ multilock.Lock = (*semaphore.Mutex)(nil)
)

func TestNewRefusesDuplicates(t *testing.T) {
	t.Parallel()
	c := open(t, shared.Ensemble(t).Servers())
	a, _ := mutex.New(c, "/a")
	a2, _ := mutex.New(c, "/a")
	if _, err := multilock.New(a, a2); !errors.Is(err, multilock.ErrDuplicate) {
		t.Fatalf("two locks on /a: %v, want ErrDuplicate", err)
	}
	if _, err := multilock.New(); err == nil {
		t.Fatal("no locks accepted")
	}
}

// TestOppositeOrdersDoNotDeadlock: two participants list the same two
// locks in opposite orders and take them over and over; in Curator's
// order of arguments they could deadlock, in path order they cannot. At
// no time do both hold.
func TestOppositeOrdersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		inside  sync.Mutex
		holders int
		overlap bool
		wg      sync.WaitGroup
	)
	errs := make(chan error, 2)
	for i := range 2 {
		c := open(t, ens.Servers())
		a, b := mu(t, c, root+"/a"), mu(t, c, root+"/b")
		locks := []multilock.Lock{a, b}
		if i == 1 {
			locks = []multilock.Lock{b, a}
		}
		m, err := multilock.New(locks...)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				inside.Lock()
				holders++
				overlap = overlap || holders > 1
				inside.Unlock()
				time.Sleep(time.Millisecond)
				inside.Lock()
				holders--
				inside.Unlock()
				if err := m.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if overlap {
		t.Fatal("both participants held at once")
	}
}

// TestAllOrNone: with one lock held elsewhere, a Multi times out and holds
// none of its locks; a Multi of a mutex and a write side holds both.
func TestAllOrNone(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	otherRW, err := rwlock.New(open(t, ens.Servers()), root+"/b")
	if err != nil {
		t.Fatal(err)
	}
	other := otherRW.WriteLock()
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	c := open(t, ens.Servers())
	a := mu(t, c, root+"/a")
	rw, err := rwlock.New(c, root+"/b")
	if err != nil {
		t.Fatal(err)
	}
	m, err := multilock.New(rw.WriteLock(), a)
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	err = m.Lock(short)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with /b held = %v, want DeadlineExceeded", err)
	}
	if a.Held() || rw.WriteLock().Held() {
		t.Fatal("a failed Multi still holds a lock")
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if !a.Held() || !rw.WriteLock().Held() || closedCh(m.Done()) {
		t.Fatal("a Multi that locked does not hold both")
	}
	if err := m.Lock(ctx); !errors.Is(err, multilock.ErrHeld) {
		t.Fatalf("second Lock = %v, want ErrHeld", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Held() || rw.WriteLock().Held() {
		t.Fatal("Unlock left a lock held")
	}
	if err := m.Unlock(ctx); !errors.Is(err, multilock.ErrNotLocked) {
		t.Fatalf("second Unlock = %v, want ErrNotLocked", err)
	}
}

// TestDoneWhenOneIsLost: Done closes, with ErrLost as the context's cause,
// when one of the locks is lost.
func TestDoneWhenOneIsLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := ens.Proxy(t)
	cut := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	m, err := multilock.New(mu(t, open(t, ens.Servers()), root+"/a"), mu(t, cut, root+"/b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	mctx := m.Context()
	p.Blackhole()
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done still open after one lock's session was cut off")
	}
	// The standard policy: the lock was lost when its connection was
	// suspended, and the Multi's cause says so.
	if cause := context.Cause(mctx); !errors.Is(cause, multilock.ErrLost) || !errors.Is(cause, mutex.ErrLockLost) || !errors.Is(cause, connection.ErrSuspended) {
		t.Fatalf("cause %v, want ErrLost, mutex.ErrLockLost and connection.ErrSuspended", cause)
	}
	if err := m.Err(); err != context.Cause(mctx) {
		t.Fatalf("Err = %v, want the Context's cause %v", err, context.Cause(mctx))
	}
	p.Restore()
	if err := m.Unlock(ctx); !errors.Is(err, connection.ErrSuspended) || errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("Unlock with a lost lock = %v, want one wrapping ErrSuspended, not ErrSessionLost", err)
	}
}
