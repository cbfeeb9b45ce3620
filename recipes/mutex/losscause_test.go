package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// waitDone waits for the hold's Done, and fails the test if it stays open.
func waitDone(t *testing.T, m *mutex.Mutex, within time.Duration) {
	t.Helper()
	select {
	case <-m.Done():
	case <-time.After(within):
		t.Fatalf("the hold's Done still open after %v", within)
	}
}

// wantCause checks that err matches every one of want and none of not.
func wantCause(t *testing.T, what string, err error, want []error, not ...error) {
	t.Helper()
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("%s = %v, want it to match %v", what, err, w)
		}
	}
	for _, n := range not {
		if errors.Is(err, n) {
			t.Errorf("%s = %v, want it not to match %v", what, err, n)
		}
	}
}

// TestErrIsNilWhileHeldAndUnlockedAfterUnlock: Err follows a context's
// convention — nil while the hold lasts, then why it ended — and after
// Unlock it says ErrUnlocked, the cause of the hold's Context too; before
// any hold it says ErrNotLocked.
func TestErrIsNilWhileHeldAndUnlockedAfterUnlock(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	m := newMutex(t, open(t, ens.Servers()), ens.Root(t)+"/lock")
	ctx := ctxFor(t, 30*time.Second)
	wantCause(t, "Err before Lock", m.Err(), []error{mutex.ErrNotLocked})
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hctx := m.Context()
	if err := m.Err(); err != nil || hctx.Err() != nil {
		t.Fatalf("while held: Err %v, Context %v; want nil", err, hctx.Err())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	err := m.Err()
	wantCause(t, "Err after Unlock", err, []error{mutex.ErrUnlocked}, mutex.ErrLockLost, mutex.ErrNotLocked)
	if cause := context.Cause(hctx); cause != err {
		t.Errorf("the hold's Context cause %v, Err %v: want one error", cause, err)
	}
	if cause := context.Cause(m.Context()); cause != err {
		t.Errorf("Context after Unlock has cause %v, Err %v: want one error", cause, err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatalf("Err of a new hold = %v, want nil", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSuspendedHoldSaysSuspendedWhileTheSessionLives: under the standard
// policy a holder's connection is blackholed for less than the session
// timeout. The hold ends at the suspension, and its Err, its Context's
// cause, a guarded write's refusal and Unlock all say ErrSuspended, not
// ErrSessionLost — while the server holds the session, which comes back
// the same. The cause stays the first one after the reconnect.
func TestSuspendedHoldSaysSuspendedWhileTheSessionLives(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	m := newMutex(t, c, root+"/lock")
	ctx := ctxFor(t, time.Minute)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	sess, hctx, guard := c.Session(), m.Context(), m.Guard()
	states := c.Listen(ctx)
	p.Blackhole()
	waitDone(t, m, 10*time.Second)
	listed := testkit.ServerHasSession(t, ens, sess.ID())
	err := m.Err()
	wantCause(t, "Err after a suspension", err, []error{mutex.ErrLockLost, connection.ErrSuspended}, connection.ErrSessionLost, mutex.ErrUnlocked)
	if cause := context.Cause(hctx); cause != err {
		t.Errorf("Context cause %v, Err %v: want one error", cause, err)
	}
	if !listed || sess.Err() != nil {
		t.Fatalf("session %#x when the hold ended: held by the server %v, Err %v; want it alive", sess.ID(), listed, sess.Err())
	}
	p.Restore()
	testkit.WaitState(t, states, connection.Reconnected, 15*time.Second)
	if c.Session() != sess {
		t.Fatal("the session changed: this test needs it to live")
	}
	_, gerr := c.Multi(ctx, guard, &zk.CreateRequest{Path: root + "/fenced", Acl: zk.WorldACL(zk.PermAll)})
	wantCause(t, "a guarded write after the suspension", gerr, []error{connection.ErrGuardFailed, mutex.ErrLockLost, connection.ErrSuspended}, connection.ErrSessionLost)
	if m.Err() != err {
		t.Errorf("Err changed after the reconnect: %v, then %v", err, m.Err())
	}
	uerr := m.Unlock(ctx)
	wantCause(t, "Unlock of the lost hold", uerr, []error{mutex.ErrLockLost, connection.ErrSuspended}, connection.ErrSessionLost)
	if m.Err() != err {
		t.Errorf("Err after Unlock of the lost hold = %v, want the hold's cause %v", m.Err(), err)
	}
}

// TestExpiredHoldSaysSessionLost: under the session policy, where a
// suspension ends no hold, a hold whose session the server expires says
// ErrSessionLost, not ErrSuspended.
func TestExpiredHoldSaysSessionLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	m := newMutex(t, c, ens.Root(t)+"/lock")
	ctx := ctxFor(t, time.Minute)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hctx, sess := m.Context(), c.Session()
	if !testkit.ServerHasSession(t, ens, sess.ID()) {
		t.Fatalf("the server does not hold the live session %#x", sess.ID())
	}
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, m, 15*time.Second)
	if testkit.ServerHasSession(t, ens, sess.ID()) {
		t.Fatalf("the server still holds session %#x after ExpireSession", sess.ID())
	}
	err := m.Err()
	wantCause(t, "Err after the session expired", err, []error{mutex.ErrLockLost, connection.ErrSessionLost}, connection.ErrSuspended, connection.ErrNodeDeleted)
	if cause := context.Cause(hctx); cause != err {
		t.Errorf("Context cause %v, Err %v: want one error", cause, err)
	}
	wantCause(t, "Unlock of the expired hold", m.Unlock(ctx), []error{mutex.ErrLockLost, connection.ErrSessionLost}, connection.ErrSuspended)
}

// TestDeletedNodeSaysNodeDeleted: a hold whose node another client
// deletes says ErrNodeDeleted — neither a suspension nor a lost session:
// its session lives, and the client's other holds with it.
func TestDeletedNodeSaysNodeDeleted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	m := newMutex(t, c, root+"/lock")
	other := newMutex(t, c, root+"/other")
	ctx := ctxFor(t, 30*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ens.Conn(t).Delete(m.Node(), -1); err != nil {
		t.Fatal(err)
	}
	waitDone(t, m, 10*time.Second)
	err := m.Err()
	wantCause(t, "Err after its node was deleted", err, []error{mutex.ErrLockLost, connection.ErrNodeDeleted}, connection.ErrSuspended, connection.ErrSessionLost)
	if cause := context.Cause(m.Context()); cause != err {
		t.Errorf("Context cause %v, Err %v: want one error", cause, err)
	}
	if other.Err() != nil || c.Session().Err() != nil {
		t.Fatalf("the other hold (%v) or the session (%v) ended with the deleted node", other.Err(), c.Session().Err())
	}
	wantCause(t, "Unlock of the lost hold", m.Unlock(ctx), []error{mutex.ErrLockLost, connection.ErrNodeDeleted})
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHoldOfAClosedClientSaysClosed: closing the client ends its holds
// with the session's error, which matches ErrSessionLost and ErrClosed.
func TestHoldOfAClosedClientSaysClosed(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c, err := connection.Open(ctxFor(t, 30*time.Second), ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, c, ens.Root(t)+"/lock")
	if err := m.Lock(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, m, 10*time.Second)
	wantCause(t, "Err after Close", m.Err(), []error{mutex.ErrLockLost, connection.ErrSessionLost, connection.ErrClosed}, connection.ErrSuspended)
}
