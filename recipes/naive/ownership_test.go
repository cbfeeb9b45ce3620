package naive_test

// Tests of ownership and release (docs/locks.md, "Ownership and release")
// for the naive lock, whose node sits at a fixed path: a hold ends before
// its release is sent, an unanswered release or create is never taken as
// not done, and participants (not sessions) own the node.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// heldBy reports whether the node at p is the one made by czxid.
func heldBy(t *testing.T, obs *zk.Conn, p string, czxid int64) bool {
	t.Helper()
	ok, st, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	return ok && st.Czxid == czxid
}

// TestUnlockWithShortDeadlineEndsTheHold: Unlock whose deadline (100 ms)
// is shorter than the reply time (300 ms) sends the delete, which applies.
// When it returns the hold is over (Held false, Done closed), the error
// says the deadline and that the outcome is unknown, and the node goes.
// Another client then takes the lock; a second Unlock of the first Lock
// must say ErrNotLocked and leave the new holder's node alone.
func TestUnlockWithShortDeadlineEndsTheHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/l"
	p := ens.Proxy(t)
	m := newLock(t, open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second)), lock)
	other := newLock(t, open(t, ens.Servers()), lock)
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done, token := m.Done(), m.Token()

	p.DelayReplies(300 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := m.Unlock(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Unlock with a deadline shorter than the reply = %v, want DeadlineExceeded", err)
	}
	testkit.WantOutcomeUnknown(t, err)
	if m.Held() {
		t.Error("Held() is true after Unlock returned: the hold was not ended")
	}
	if !testkit.Closed(done) {
		t.Error("the hold's Done is open after Unlock returned")
	}
	p.Restore()
	zktest.Eventually(t, 5*time.Second, "the released node is deleted", func() error {
		if heldBy(t, obs, lock, token) {
			return errors.New("still there")
		}
		return nil
	})

	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := other.Lock(lctx); err != nil {
		t.Fatalf("another client's Lock after the release: %v", err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, naive.ErrNotLocked) {
		t.Errorf("a second Unlock = %v, want ErrNotLocked", err)
	}
	if !heldBy(t, obs, lock, other.Token()) {
		t.Error("the second Unlock deleted the next holder's node")
	}
	if err := m.TryLock(ctx); !errors.Is(err, naive.ErrLocked) {
		t.Errorf("TryLock while another client holds = %v, want ErrLocked", err)
		if err == nil {
			_ = m.Unlock(ctx)
		}
	}
	_ = other.Unlock(ctx)
}

// TestLocksOfOneClientExcludeEachOther: two naive Lock values on one
// shared client are two participants. While the first holds, the
// second's TryLock must say ErrLocked (the node belongs to the client's
// session, not to the second participant), and its Unlock must say
// ErrNotLocked without deleting the first's node: a third client still
// finds the lock taken.
func TestLocksOfOneClientExcludeEachOther(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/l"
	c := open(t, ens.Servers())
	first, second := newLock(t, c, lock), newLock(t, c, lock)
	third := newLock(t, open(t, ens.Servers()), lock)
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := second.TryLock(ctx); !errors.Is(err, naive.ErrLocked) {
		t.Errorf("the second participant's TryLock while the first holds = %v, want ErrLocked", err)
	}
	if err := second.Unlock(ctx); !errors.Is(err, naive.ErrNotLocked) {
		t.Errorf("the second participant's Unlock = %v, want ErrNotLocked", err)
	}
	if !heldBy(t, obs, lock, first.Token()) {
		t.Error("the second participant deleted the first's node")
	}
	if err := third.TryLock(ctx); !errors.Is(err, naive.ErrLocked) {
		t.Errorf("a third client's TryLock while the first holds (Done open: %v) = %v, want ErrLocked",
			!testkit.Closed(first.Done()), err)
		if err == nil {
			_ = third.Unlock(ctx)
		}
	}
	if testkit.Closed(first.Done()) {
		t.Error("the first participant's hold ended")
	}
	_ = first.Unlock(ctx)
	_ = second.Unlock(ctx)
}

// TestLockCancelledAfterItsCreateLeavesNoNode: a Lock whose context ends
// while its create is in flight (the create applies; its answer comes
// after the deadline) fails, and must leave no node: the server shows the
// path empty within a few seconds, a new Lock of the same client does not
// adopt the node as its own, and another client can take the lock.
func TestLockCancelledAfterItsCreateLeavesNoNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/l"
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	_, _, created, err := obs.ExistsW(lock)
	if err != nil {
		t.Fatal(err)
	}

	// The create is sent at once and applied; its answer comes 300 ms
	// later, long after the 20 ms deadline.
	p.DelayReplies(300 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	err = newLock(t, c, lock).Lock(short)
	cancel()
	if err == nil {
		t.Fatal("Lock returned nil after its deadline")
	}
	select {
	case <-created:
	case <-time.After(2 * time.Second):
		t.Fatal("the create never reached the server; the test proves nothing")
	}
	p.Restore()

	var leaked int64
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, st, err := obs.Exists(lock)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			leaked = st.Czxid
			t.Errorf("the node of the failed Lock is still there 5 s later (czxid %d, owner %#x)", st.Czxid, st.EphemeralOwner)
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the server's view
	}

	again := newLock(t, c, lock)
	switch err := again.TryLock(ctx); {
	case err == nil:
		if leaked != 0 && again.Token() == leaked {
			t.Errorf("a new Lock of the same client adopted the node of the failed Lock (czxid %d)", leaked)
		}
		if err := again.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	case !errors.Is(err, naive.ErrLocked):
		t.Fatalf("TryLock of a new Lock of the same client: %v", err)
	}

	third := newLock(t, open(t, ens.Servers()), lock)
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := third.Lock(lctx); err != nil {
		t.Fatalf("another client cannot take the lock after the failed Lock: %v", err)
	}
	_ = third.Unlock(ctx)
}
