package mutex_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/retry"
)

// TestOwnSoonWatchFailsThenNodeDeleted attacks the hold handed out before
// its own node's watch is answered (lockcore Acquired.OwnSoon). Under
// SessionPolicy a cut does not end the hold's trusted period; when the cut
// makes that watch's read fail with a connection error (the retry policy
// gives up, the session lives), the hold is left with no watch on its
// node at all. An operator then deletes the node: the hold is lost, yet
// its Done must close (docs/safety.md: "A hold's Done closes no later than
// the hold is lost").
func TestOwnSoonWatchFailsThenNodeDeleted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	a := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second),
		connection.WithErrorPolicy(connection.SessionPolicy),
		connection.WithRetryPolicy(retry.NTimes(0, 0)))
	ctx := ctxFor(t, time.Minute)
	obs := ens.Conn(t)
	m := newMutex(t, a, root+"/lock")
	// The directory's first node (number 0) holds without a listing: take
	// it once, so that the next one is decided by the first listing.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Every byte takes 150 ms each way: the create and the first listing
	// are answered together, and the node's watch, sent once the create is
	// answered, is still on its way when Lock returns.
	p.Delay(150 * time.Millisecond)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	p.Cut() // the watch's read is never answered on this connection
	time.Sleep(time.Second)
	p.Restore()
	// The session lives (SessionPolicy: the hold is still trusted).
	if _, _, err := a.Exists(ctx, root); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
		t.Fatalf("hold ended before its node was deleted: %v", m.Context().Err())
	default:
	}
	if err := obs.Delete(m.Node(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		// The guard still refuses (the server checks the node), but the
		// hold's holder is never told.
		_, gerr := a.Multi(ctx, m.Guard())
		t.Fatalf("the hold's node was deleted 5 s ago and Done is still open (guarded write: %v)", gerr)
	}
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrLockLost) {
		t.Errorf("Unlock after the loss: %v, want ErrLockLost", err)
	}
}
