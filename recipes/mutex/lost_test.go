package mutex_test

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
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestLockDuringLastUnlockWaitsForIt: one goroutine's Unlock is deleting
// the node (its replies slowed down) when another goroutine of the same
// participant calls Lock. The Lock must not re-enter the hold that is
// being released: whatever the interleaving, when both return the Mutex
// holds the lock, the server agrees, and one Unlock releases it.
func TestLockDuringLastUnlockWaitsForIt(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/lock"
	p := ens.Proxy(t)
	m := newMutex(t, open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second)), lock)
	other := newMutex(t, open(t, ens.Servers()), lock)
	ctx := ctxFor(t, 30*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	p.DelayReplies(300 * time.Millisecond)
	var wg sync.WaitGroup
	var unlockErr, lockErr error
	wg.Add(2)
	go func() { defer wg.Done(); unlockErr = m.Unlock(ctx) }()
	go func() {
		defer wg.Done()
		time.Sleep(50 * time.Millisecond) // most likely while the delete is in flight; any order must work
		lockErr = m.Lock(ctx)
	}()
	wg.Wait()
	p.Restore()
	if unlockErr != nil || lockErr != nil {
		t.Fatalf("Unlock = %v, Lock = %v", unlockErr, lockErr)
	}
	if !m.Held() || closed(m.Done()) {
		t.Fatal("Lock returned nil but the Mutex does not hold a live hold")
	}
	if ok, st, err := ens.Conn(t).Exists(m.Node()); err != nil || !ok || st.Czxid != m.Token() {
		t.Fatalf("the hold's node %s on the server: exists=%v err=%v", m.Node(), ok, err)
	}
	if err := other.TryLock(ctx); !errors.Is(err, mutex.ErrLocked) {
		t.Fatalf("another participant's TryLock = %v, want ErrLocked", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the new hold = %v", err)
	}
	if err := other.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the release: %v", err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLostHoldIsNeverReentered: a hold whose Done closed (a cut longer
// than the suspension threshold, shorter than the session) is lost. Lock
// on it returns ErrLockLost instead of re-entering it; Unlock on it ends
// it at once even when the delete cannot be sent; its node, still alive
// in the surviving session, is deleted in the background (checked on the
// server); and the Mutex is usable again.
func TestLostHoldIsNeverReentered(t *testing.T) {
	for _, op := range []string{"Lock", "Unlock"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			root := ens.Root(t)
			lock := root + "/lock"
			p := ens.Proxy(t)
			c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
			m := newMutex(t, c, lock)
			ctx := ctxFor(t, 30*time.Second)
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			sess, oldNode, oldToken := c.Session(), m.Node(), m.Token()
			observer := ens.Conn(t)

			p.Blackhole()
			<-m.Done()
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			var err error
			if op == "Lock" {
				err = m.Lock(short)
			} else {
				err = m.Unlock(short)
			}
			cancel()
			p.Restore()
			if !errors.Is(err, mutex.ErrLockLost) {
				t.Fatalf("%s on a lost hold = %v, want ErrLockLost", op, err)
			}
			if m.Held() || m.Token() != 0 {
				t.Fatalf("%s on a lost hold left it in place (token %d)", op, m.Token())
			}
			zktest.Eventually(t, 10*time.Second, "the lost hold's node is deleted", func() error {
				ok, _, err := observer.Exists(oldNode)
				if err == nil && ok {
					err = errors.New("still there")
				}
				return err
			})
			if got := c.Session(); got != sess {
				t.Fatal("the session did not survive the short cut; the test proves nothing")
			}
			if err := m.Lock(ctx); err != nil {
				t.Fatalf("Lock after the lost hold: %v", err)
			}
			if m.Token() <= oldToken || m.Node() == oldNode || closed(m.Done()) {
				t.Fatalf("new hold: token %d (old %d), node %s", m.Token(), oldToken, m.Node())
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCancelledLocksLeaveNothing cancels a thousand Lock calls at random
// moments — random short deadlines, with and without delays on the wire,
// while another participant holds the lock — and then finds the lock
// directory empty.
func TestCancelledLocksLeaveNothing(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/lock"
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	holder := newMutex(t, open(t, ens.Servers()), lock)
	ctx := ctxFor(t, 2*time.Minute)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const workers, perWorker = 4, 250
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for phase, delay := range []time.Duration{0, time.Millisecond} {
		p.Delay(delay)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(phase*workers+w)))
				for range perWorker / 2 {
					m, err := mutex.New(c, lock)
					if err != nil {
						errs <- err
						return
					}
					d := time.Duration(rng.Int64N(int64(6 * time.Millisecond)))
					lctx, cancel := context.WithTimeout(ctx, d)
					err = m.Lock(lctx)
					cancel()
					if err == nil {
						errs <- fmt.Errorf("Lock succeeded while another participant holds the lock")
						return
					}
					if !errors.Is(err, context.DeadlineExceeded) {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	p.Restore()
	observer := ens.Conn(t)
	zktest.Eventually(t, 15*time.Second, "only the holder's node is left", func() error {
		kids, _, err := observer.Children(lock)
		if err != nil {
			return err
		}
		if len(kids) != 1 {
			return fmt.Errorf("%d nodes: %v", len(kids), kids[:min(len(kids), 3)])
		}
		return nil
	})
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	kids, _, err := observer.Children(lock)
	if err != nil && !errors.Is(err, zk.ErrNoNode) || len(kids) != 0 {
		t.Fatalf("after the holder's release: %v, %v", kids, err)
	}
}

// TestAbandonedWaitsDoNotPileUpWatches: a waiter that gives up over and
// over on the same predecessor leaves the watch of one wait (on its
// predecessor), counted on the client and on the server (wchc, by
// session), and none once the predecessor is gone.
func TestAbandonedWaitsDoNotPileUpWatches(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/lock"
	holder := newMutex(t, open(t, ens.Servers()), lock)
	wc := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		m := newMutex(t, wc, lock)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		err := m.Lock(wctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock = %v, want DeadlineExceeded", err)
		}
	}
	// Exactly one: the holder's node, which every wait watched.
	if n := wc.Stats().PendingWatches; n != 1 {
		t.Fatalf("%d pending watches on the client after 50 abandoned waits, want 1", n)
	}
	if n := testkit.ServerWatches(t, ens, wc.Session().ID()); n != 1 {
		t.Fatalf("%d watches of the waiter's session on the server, want 1", n)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the watch goes with its node", func() error {
		if n := wc.Stats().PendingWatches; n != 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
}
