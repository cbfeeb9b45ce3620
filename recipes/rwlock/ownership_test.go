package rwlock_test

// Tests of ownership and release (docs/locks.md, "Ownership and release")
// for the read/write lock: a hold ends before its release is sent, an
// unanswered release is never taken as not done, and every path that made
// a node deletes it when it fails.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestUnlockWithShortDeadlineEndsTheHold: a side's Unlock whose deadline
// (100 ms) is shorter than the reply time (300 ms) sends the delete,
// which applies. When Unlock returns the hold is over: Held false, Done
// closed, Context cancelled, the error says the deadline and that the
// outcome is unknown, the node goes, the next Lock of the side makes a
// new node instead of re-entering the deleted one, and once that is
// released a further Unlock says ErrNotLocked.
func TestUnlockWithShortDeadlineEndsTheHold(t *testing.T) {
	t.Parallel()
	for _, side := range []string{"write", "read"} {
		t.Run(side, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			lock := ens.Root(t) + "/rw"
			p := ens.Proxy(t)
			rw := newRW(t, open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second)), lock)
			s := rw.WriteLock()
			if side == "read" {
				s = rw.ReadLock()
			}
			obs := ens.Conn(t)
			ctx := ctxFor(t, 30*time.Second)
			if err := s.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			done, hctx, node, token := s.Done(), s.Context(), s.Node(), s.Token()

			p.DelayReplies(300 * time.Millisecond)
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			err := s.Unlock(short)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Unlock with a deadline shorter than the reply = %v, want DeadlineExceeded", err)
			}
			testkit.WantOutcomeUnknown(t, err)
			if s.Held() {
				t.Error("Held() is true after Unlock returned: the hold was not ended")
			}
			if !testkit.Closed(done) {
				t.Error("the hold's Done is open after Unlock returned")
			}
			if hctx.Err() == nil {
				t.Error("the hold's Context is not cancelled after Unlock returned")
			}
			p.Restore()
			zktest.Eventually(t, 5*time.Second, "the released node is deleted", func() error {
				ok, _, err := obs.Exists(node)
				if err == nil && ok {
					err = errors.New("still there")
				}
				return err
			})

			if err := s.Lock(ctx); err != nil {
				t.Fatalf("Lock after the unanswered Unlock: %v", err)
			}
			if s.Node() == node || s.Token() == token {
				t.Errorf("Lock re-entered the released hold (node %s) instead of making a new node", node)
			}
			if ok, st, err := obs.Exists(s.Node()); err != nil || !ok || st.Czxid != s.Token() {
				t.Errorf("Lock returned nil but its node %s is not on the server (exists=%v, err=%v)", s.Node(), ok, err)
			}
			if err := s.Unlock(ctx); err != nil {
				t.Errorf("Unlock of the new hold: %v", err)
			}
			if err := s.Unlock(ctx); !errors.Is(err, rwlock.ErrNotLocked) {
				t.Errorf("Unlock without a hold = %v, want ErrNotLocked", err)
			}
		})
	}
}

// TestFailedDowngradeLeavesNoReadNode: a downgrade (the write side held,
// then the read side locked) whose read node is made but whose hold is
// never confirmed — the session is suspended between the create and its
// answer, and the context ends before the session is trusted again — must
// delete that read node: afterwards a writer on another client can take
// the write lock.
//
// The suspension is made deterministic with answers that come late while
// the server keeps hearing the client: under the standard policy the
// client suspends when the newest answered request was sent two thirds of
// the session timeout ago (4 s of 6 s) and declares the session lost at
// 5.75 s. Answers delayed 4.6 s, with requests going out every 50 ms, keep
// it suspended and alive. go-zookeeper drops a connection that reads
// nothing for 4 s, so the delay is raised in two steps (2.5 s, then
// 4.6 s), each leaving a gap shorter than that.
func TestFailedDowngradeLeavesNoReadNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	rw := newRW(t, c, lock)
	obs := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	if err := rw.WriteLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	sess := c.Session()

	// Requests every 50 ms, so that (late) answers keep coming.
	traffic, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-traffic.Done():
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, _ = c.Exists(traffic, lock)
			}()
		}
	}()
	stop := sync.OnceFunc(func() {
		stopTraffic()
		wg.Wait()
		p.Restore()
	})
	defer stop()

	p.DelayReplies(2500 * time.Millisecond)
	if _, _, err := c.Exists(ctx, lock); err != nil { // answered 2.5 s late: the late answers flow
		t.Fatal(err)
	}
	if testkit.Closed(rw.WriteLock().Done()) {
		t.Fatal("the write hold was lost before the downgrade; the test proves nothing")
	}
	_, _, changed, err := obs.ChildrenW(lock)
	if err != nil {
		t.Fatal(err)
	}
	p.DelayReplies(4600 * time.Millisecond)
	// The read node's create is sent now and answered 4.6 s later, when
	// the client has been suspended for about 0.6 s; the context ends
	// 0.9 s after that, while the session is still suspended.
	dctx, cancel := context.WithTimeout(ctx, 5500*time.Millisecond)
	err = rw.ReadLock().Lock(dctx)
	cancel()
	if err == nil {
		t.Fatal("the downgrade succeeded: the session was not suspended in time; the test proves nothing")
	}
	if st := c.State(); st != connection.Suspended {
		t.Fatalf("the client is %v, not suspended, when the downgrade fails; the test proves nothing", st)
	}
	t.Logf("the failed downgrade, while suspended: %v", err)
	select {
	case <-changed:
	default:
		t.Fatal("the downgrade made no read node; the test proves nothing")
	}
	stop()
	if c.Session() != sess {
		t.Fatal("the session was lost (its nodes went with it); the test proves nothing")
	}
	if err := rw.WriteLock().Unlock(ctx); err != nil && !errors.Is(err, rwlock.ErrLockLost) {
		t.Fatalf("Unlock of the write side: %v", err)
	}

	writer := newRW(t, open(t, ens.Servers()), lock).WriteLock()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := writer.Lock(wctx); err != nil {
		kids, _, _ := obs.Children(lock)
		var reads []string
		for _, k := range kids {
			if strings.Contains(k, "__READ__") {
				reads = append(reads, k)
			}
		}
		t.Fatalf("a writer on another client cannot take the write lock after the failed downgrade (%v); read nodes left: %v",
			err, reads)
	}
	if err := writer.Unlock(ctx); err != nil {
		t.Error(err)
	}
}
