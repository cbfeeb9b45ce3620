package multilock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// TestLockFailsWhenAnEarlierLockIsLost: a Multi takes /a, then waits for
// /b, which another participant holds. Meanwhile /a's client is cut off
// for longer than its session timeout, the server expires the session and
// a third participant takes /a. Lock must not return nil then: it fails
// with /a's lost error and holds nothing.
func TestLockFailsWhenAnEarlierLockIsLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := ens.Proxy(t)
	cut := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	t.Cleanup(p.Restore) // before cut is closed
	a := mu(t, cut, root+"/a")
	b := mu(t, open(t, ens.Servers()), root+"/b")
	holderB := mu(t, open(t, ens.Servers()), root+"/b")
	if err := holderB.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := multilock.New(b, a)
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() { result <- m.Lock(ctx) }()
	observer := open(t, ens.Servers())
	waitContenders(t, observer, 3, root+"/a", root+"/b") // holds /a, waits for /b

	p.Blackhole()
	thief := mu(t, observer, root+"/a")
	if err := thief.Lock(ctx); err != nil { // once the server expired a's session
		t.Fatal(err)
	}
	defer thief.Unlock(ctx)
	if err := holderB.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	select {
	case err = <-result:
	case <-ctx.Done():
		t.Fatal("Lock still waiting")
	}
	if err == nil {
		held := !closedCh(thief.Done())
		_ = m.Unlock(ctx)
		t.Fatalf("Lock returned nil while its lock on /a was lost (another participant holds it: %v)", held)
	}
	t.Logf("Lock = %v", err)
	if !errors.Is(err, mutex.ErrLockLost) || !errors.Is(err, multilock.ErrLost) {
		t.Fatalf("Lock = %v, want an error matching mutex.ErrLockLost and multilock.ErrLost", err)
	}
	if b.Held() || a.Held() || !closedCh(m.Done()) {
		t.Fatalf("a failed Lock holds: /a %v, /b %v, Done open %v", a.Held(), b.Held(), !closedCh(m.Done()))
	}
	if err := m.Unlock(ctx); !errors.Is(err, multilock.ErrNotLocked) {
		t.Fatalf("Unlock after a failed Lock = %v, want ErrNotLocked", err)
	}
}

// TestDoneClosesWithTheLostLock: the Multi's Done closes the moment one of
// its locks' holds ends, not a goroutine later: whoever sees that lock's
// Done closed finds the Multi's closed too. The hold ends behind the
// Multi's back, by an Unlock of the lock itself (over and over, as one
// look proves little), then once for real, by a session cut off for
// longer than its timeout.
//
// It needs holds whose Context has an AfterFunc method that runs its
// function in the goroutine that ends the hold, before the hold's Done
// closes (internal/lockcore); where the Multi falls back on
// context.AfterFunc, its Done closes in a goroutine of its own, a moment
// after the lock's, and this test fails.
func TestDoneClosesWithTheLostLock(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// lateBy observes lock's Done close, from a goroutine of its own
	// waiting on it as any user of the lock would, and reports whether the
	// Multi's Done (multi) was still open at that moment.
	lateBy := func(lock, multi <-chan struct{}) <-chan bool {
		late := make(chan bool, 1)
		go func() {
			select {
			case <-lock:
				late <- !closedCh(multi)
			case <-ctx.Done():
				late <- true
			}
		}()
		return late
	}

	c := open(t, ens.Servers())
	a, b := mu(t, c, root+"/a"), mu(t, c, root+"/b")
	m, err := multilock.New(a, b)
	if err != nil {
		t.Fatal(err)
	}
	lates := 0
	const rounds = 30
	for i := range rounds {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		part := []*mutex.Mutex{a, b}[i%2]
		late := lateBy(part.Done(), m.Done())
		if err := part.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if <-late {
			lates++
		}
		if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrNotLocked) {
			t.Fatalf("Unlock with a lock released behind the Multi's back = %v, want one matching mutex.ErrNotLocked", err)
		}
	}
	if lates > 0 {
		t.Errorf("released behind its back: the Multi's Done still open when the lock's closed, %d times of %d", lates, rounds)
	}

	p := ens.Proxy(t)
	cut := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	t.Cleanup(p.Restore) // before cut is closed
	lost := mu(t, cut, root+"/c")
	m, err = multilock.New(a, lost)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	late := lateBy(lost.Done(), m.Done())
	p.Blackhole()
	if <-late {
		t.Error("lost with its session: the Multi's Done still open when the lock's closed")
	}
	p.Restore()
	// The standard policy: the lock was lost at the suspension that came
	// before its session's loss, and says so.
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrLockLost) || !errors.Is(err, connection.ErrSuspended) {
		t.Fatalf("Unlock with a lost lock = %v, want one wrapping ErrLockLost and ErrSuspended", err)
	}
}

// TestUnlockClosesDoneFirst: Unlock closes Done, and cancels Context,
// before it sends any release: a participant that takes one of the locks
// the moment its release applies finds the Multi's Done closed, and so
// does whoever sees that lock's own Done close.
func TestUnlockClosesDoneFirst(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := open(t, ens.Servers())
	a, b := mu(t, c, root+"/a"), mu(t, c, root+"/b")
	m, err := multilock.New(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done, mctx := m.Done(), m.Context()

	// /b is released first (reverse order).
	other := open(t, ens.Servers())
	next := mu(t, other, root+"/b")
	took := make(chan error, 1)
	openWhenTaken := make(chan bool, 1)
	go func() {
		err := next.Lock(ctx)
		openWhenTaken <- !closedCh(done)
		took <- err
	}()
	openWhenEnded := make(chan bool, 1)
	go func() {
		select {
		case <-b.Done():
			openWhenEnded <- !closedCh(done)
		case <-ctx.Done():
			openWhenEnded <- true
		}
	}()
	waitContenders(t, other, 2, root+"/b")

	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if <-openWhenEnded {
		t.Error("the Multi's Done was open when its lock on /b had ended")
	}
	if err := <-took; err != nil {
		t.Fatal(err)
	}
	defer next.Unlock(ctx)
	if <-openWhenTaken {
		t.Error("another participant took /b while the Multi's Done was open")
	}
	if !closedCh(done) || mctx.Err() == nil {
		t.Fatalf("after Unlock: Done closed %v, Context cancelled %v; want both", closedCh(done), mctx.Err() != nil)
	}
}

// TestUnlockEndsTheHold: whatever its parts answer, Unlock leaves the
// Multi not held, with Done closed, and none of its locks held: with a
// context that has already ended (it still releases them), and with a
// lock released behind the Multi's back (its error is reported, the rest
// released).
func TestUnlockEndsTheHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := open(t, ens.Servers())
	a, b := mu(t, c, root+"/a"), mu(t, c, root+"/b")
	m, err := multilock.New(a, b)
	if err != nil {
		t.Fatal(err)
	}
	ended, cancelEnded := context.WithCancel(ctx)
	cancelEnded()
	check := func(how string) {
		t.Helper()
		if a.Held() || b.Held() || !closedCh(m.Done()) {
			t.Fatalf("%s: /a held %v, /b held %v, Done open %v", how, a.Held(), b.Held(), !closedCh(m.Done()))
		}
		if err := m.Unlock(ctx); !errors.Is(err, multilock.ErrNotLocked) {
			t.Fatalf("%s: a second Unlock = %v, want ErrNotLocked", how, err)
		}
	}
	for range 10 {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		_ = m.Unlock(ended)
		check("Unlock with an ended context")
	}

	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrNotLocked) {
		t.Fatalf("Unlock with /b released behind its back = %v, want one matching mutex.ErrNotLocked", err)
	}
	check("Unlock with a lock released behind its back")
}
