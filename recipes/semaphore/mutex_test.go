package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// newMutex returns a Mutex at path on a client of its own.
func newMutex(t *testing.T, path string) *semaphore.Mutex {
	t.Helper()
	m, err := semaphore.NewMutex(newSem(t, open(t, shared.Ensemble(t).Servers()), path, 1))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// lockedBeside returns a Mutex at path, and holds the path's lease with a
// Mutex of another client for the test's length.
func lockedBeside(t *testing.T, path string) *semaphore.Mutex {
	t.Helper()
	holder := newMutex(t, path)
	if err := holder.Lock(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Unlock(context.Background()) })
	return newMutex(t, path)
}

// waitingLock starts m.Lock and returns once its lease node is made (the
// Lock waits), and a channel that gives Lock's error.
func waitingLock(t *testing.T, m *semaphore.Mutex, ctx context.Context) <-chan error {
	t.Helper()
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	obs := shared.Ensemble(t).Conn(t)
	deadline := time.Now().Add(20 * time.Second)
	for leaseNodes(t, obs, m.Path()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the second Lock made no lease node")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return locked
}

// TestMutexUnlockHonoursItsContextWhileLockWaits: an Unlock while the same
// Mutex's Lock waits has nothing to release, and returns when its own
// context ends rather than when the Lock does.
func TestMutexUnlockHonoursItsContextWhileLockWaits(t *testing.T) {
	t.Parallel()
	m := lockedBeside(t, shared.Ensemble(t).Root(t)+"/sm")
	lctx, cancel := context.WithCancel(ctxFor(t, 30*time.Second))
	locked := waitingLock(t, m, lctx)
	uctx, ucancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer ucancel()
	unlocked := make(chan error, 1)
	go func() { unlocked <- m.Unlock(uctx) }()
	var err error
	answered := true
	select {
	case err = <-unlocked:
	case <-time.After(10 * time.Second):
		answered = false
	}
	cancel()
	if err := <-locked; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Lock = %v, want context.Canceled", err)
	}
	if !answered {
		<-unlocked
		t.Fatal("Unlock ignored its context while Lock waited")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Unlock while Lock waits = %v, want its context's error", err)
	}
}

// TestMutexReportsNothingHeldWhileLockWaits: while the Mutex's Lock
// waits, Done, Err and Token answer at once that nothing is held.
func TestMutexReportsNothingHeldWhileLockWaits(t *testing.T) {
	t.Parallel()
	m := lockedBeside(t, shared.Ensemble(t).Root(t)+"/sm")
	lctx, cancel := context.WithCancel(ctxFor(t, 30*time.Second))
	locked := waitingLock(t, m, lctx)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		if !closedCh(m.Done()) {
			t.Error("Done is open while nothing is held")
		}
		if err := m.Err(); !errors.Is(err, semaphore.ErrNotLocked) {
			t.Errorf("Err = %v, want ErrNotLocked", err)
		}
		if tok := m.Token(); tok != 0 {
			t.Errorf("Token = %d, want 0", tok)
		}
	}()
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Error("Done, Err and Token waited for Lock")
	}
	cancel()
	<-locked
	<-answered
}

// TestMutexLockAfterLossReportsTheLoss: a Lock on a Mutex whose lease was
// lost (its node deleted by someone else) reports the loss and drops the
// lease; the next Lock takes a new one.
func TestMutexLockAfterLossReportsTheLoss(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sm"
	ctx := ctxFor(t, 30*time.Second)
	m := newMutex(t, path)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	lost := m.Token()
	obs := ens.Conn(t)
	kids, _, err := obs.Children(path + "/leases")
	if err != nil || len(kids) != 1 {
		t.Fatalf("lease nodes = %v, %v; want one", kids, err)
	}
	if err := obs.Delete(path+"/leases/"+kids[0], -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatal("the lease's deletion did not end its hold")
	}
	if err := m.Lock(ctx); !errors.Is(err, semaphore.ErrLeaseLost) {
		t.Fatalf("Lock after the lease was lost = %v, want ErrLeaseLost", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock after the loss was reported = %v", err)
	}
	if m.Token() == lost || m.Token() == 0 {
		t.Errorf("Token = %d after a new Lock, the lost lease's was %d", m.Token(), lost)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
