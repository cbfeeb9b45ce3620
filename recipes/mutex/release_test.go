package mutex_test

// Releases of a Mutex: a cancelled context never enters its reentrancy
// gate, and the background delete of an unanswered release survives a
// revocation. The contract every hold keeps is holdtest's (hold_test.go).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// nodeGone waits (at most within) until the server shows no node at p.
func nodeGone(t *testing.T, obs *zk.Conn, p string, within time.Duration) {
	t.Helper()
	zktest.Eventually(t, within, "node "+p+" is deleted", func() error {
		ok, _, err := obs.Exists(p)
		if err == nil && ok {
			err = errors.New("still there")
		}
		return err
	})
}

// TestCancelledContextNeverEntersTheGate: Lock with an already-cancelled
// context returns the context's error every time, even when nothing else
// holds the Mutex's gate (a select between a free gate and a done context
// picks either at random): a reentrant Lock does not count one more hold.
// Unlock with one lets go all the same, every time, and says so.
func TestCancelledContextNeverEntersTheGate(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	c := open(t, ens.Servers())
	m := newMutex(t, c, lock)
	ctx := ctxFor(t, 30*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	node := m.Node()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	const n = 200
	lockNil := 0
	for range n {
		if err := m.Lock(cancelled); !errors.Is(err, context.Canceled) {
			if err == nil {
				lockNil++
			} else {
				t.Errorf("Lock with a cancelled context = %v, want context.Canceled", err)
			}
		}
	}
	if lockNil > 0 {
		t.Errorf("with a cancelled context, %d of %d Locks returned nil, want context.Canceled every time", lockNil, n)
	}
	if !m.Held() || closed(m.Done()) {
		t.Fatal("the hold taken before is gone")
	}
	// Unlock, on the contrary, lets go whatever its context: a deferred
	// Unlock with the context of work that ran out of time must not keep
	// the lock until the session ends. It says the release was not
	// confirmed, and the node goes in the background.
	if err := m.Unlock(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Unlock with a cancelled context = %v, want an error matching context.Canceled", err)
	}
	if m.Held() || !closed(m.Done()) {
		t.Fatal("Unlock with a cancelled context left the hold: it is kept until the session ends")
	}
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrNotLocked) {
		t.Errorf("a second Unlock = %v, want ErrNotLocked: the count was changed", err)
	}
	zktest.Eventually(t, 10*time.Second, "the node deleted in the background", func() error {
		if ok, _, err := c.Exists(ctx, node); err != nil || ok {
			return fmt.Errorf("exists %v, %v", ok, err)
		}
		return nil
	})
}

// TestBackgroundDeleteSurvivesRevocation: an Unlock whose delete got no
// answer (the connection stalled; outcome unknown) returns with the hold
// over, and the node "is still guaranteed to go in its session": the client
// deletes it in the background, proving first that it is the node the hold
// made (stat by czxid), then deleting at the version read. A revocation
// (mutex.Revoke, Curator's Revoker) written to the node between that read
// and the delete makes the delete fail with BadVersion; the cleanup must
// not give up there, or the node would stay for the session's life and
// nobody could take the lock.
func TestBackgroundDeleteSurvivesRevocation(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy),
		connection.WithLogger(slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	m := newMutex(t, c, lock)
	obs := ens.Conn(t)
	ctx := ctxFor(t, 60*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	node := m.Node()
	states := c.Listen(ctx)

	// The delete goes into a stalled connection: no answer, and it does not
	// apply.
	p.Blackhole()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := m.Unlock(short)
	cancel()
	if !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Fatalf("Unlock over a stalled connection = %v, want ErrOutcomeUnknown", err)
	}
	if m.Held() {
		t.Fatal("still held after Unlock")
	}
	// The connection comes back in the same session, slowly: the
	// background cleanup reads the node, and its answer takes 2 s.
	time.Sleep(100 * time.Millisecond)
	p.Restore()
	p.DelayReplies(2 * time.Second)
	for s := range states {
		if s == connection.Reconnected {
			break
		}
	}
	// Meanwhile someone asks the (former) holder to let go.
	time.Sleep(time.Second)
	if err := mutex.Revoke(ctx, open(t, ens.Servers()), node); err != nil {
		t.Logf("revoke: %v (the node went already)", err)
	}
	time.Sleep(3 * time.Second)
	p.Restore()

	// The node must go while the session lives; another client must then
	// be able to take the lock.
	nodeGone(t, obs, node, 10*time.Second)
	other := newMutex(t, open(t, ens.Servers()), lock)
	tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
	defer tcancel()
	if err := other.Lock(tctx); err != nil {
		t.Errorf("another client cannot take the lock released by the first: %v", err)
	}
}

// tlog writes a client's log to the test's.
type tlog struct{ t *testing.T }

func (w tlog) Write(b []byte) (int, error) { w.t.Log(strings.TrimSpace(string(b))); return len(b), nil }
