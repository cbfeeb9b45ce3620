package naive_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// TestLockNeverHoldsANodeMadeAgainByAnother: the lock's node is made and
// read with a watch; before the hold starts, an operator writes to it
// (the watch fires for a change of the data), deletes it, and another
// session makes the lock's node again — that session holds the lock. Lock
// must not return holding: its node is gone, and the node at the path is
// the other holder's.
func TestLockNeverHoldsANodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lpath := ens.Root(t) + "/l"
	obs := ens.Conn(t)
	other := ens.Conn(t) // the other holder's session
	f := testkit.NewOwnNodeFault(func(p string) bool { return p == lpath }, nil, testkit.WrittenThenMadeAgain(obs, other))
	c := open(t, ens.Servers(), connection.WithObserver(f.Observer))
	l := newLock(t, c, lpath)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.Lock(ctx)
	f.Made(t)
	if err != nil {
		t.Logf("Lock = %v", err) // not held: nothing held twice
		return
	}
	_, st, gerr := obs.Get(lpath)
	if gerr == nil && st.EphemeralOwner == other.SessionID() && !testkit.Closed(l.Done()) {
		t.Errorf("Lock returned holding (token %#x, Done open) while another session's node (czxid %#x) is the lock's node", l.Token(), st.Czxid)
	}
	uerr := l.Unlock(context.Background())
	if ok, _, err := obs.Exists(lpath); err == nil && !ok {
		t.Errorf("Unlock (%v) deleted the other holder's node", uerr)
	}
}

// TestLockWhoseSessionExpiresAfterAWriteToItsNodeIsNotADeletion: the
// lock's node is made and read with a watch; before the hold starts, an
// operator writes to it (the watch fires for a change of the data) and
// the client's session expires, taking the node with it. Nobody deleted
// the node: Lock must not fail with connection.ErrNodeDeleted. It takes
// the lock in the next session.
func TestLockWhoseSessionExpiresAfterAWriteToItsNodeIsNotADeletion(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	lpath := ens.Root(t) + "/l"
	p := ens.Proxy(t)
	f := testkit.NewOwnNodeFault(func(p string) bool { return p == lpath }, nil, testkit.WrittenThenExpired(ens.Conn(t), p))
	c := open(t, p.Servers(), connection.WithObserver(f.Observer), connection.WithSessionTimeout(10*time.Second))
	sid := c.Session().ID()
	l := newLock(t, c, lpath)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := l.Lock(ctx)
	f.Made(t)
	if s := c.Session(); s == nil || s.ID() == sid {
		t.Fatal("the session did not change: not the case under test")
	}
	if errors.Is(err, connection.ErrNodeDeleted) {
		t.Fatalf("Lock = %v; nobody deleted the lock's node: it went with the expired session", err)
	}
	if err != nil {
		t.Fatalf("Lock = %v; want the lock, taken in the next session", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
