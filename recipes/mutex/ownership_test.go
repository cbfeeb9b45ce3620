package mutex_test

// Tests of ownership and release (docs/locks.md, "Ownership and release"):
// a hold ends before its release is sent, an unanswered release is never
// taken as not done, participants (not sessions) own nodes, and a hold
// whose node is gone has ended.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
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

// childCount waits until dir has n children on the server.
func childCount(t *testing.T, obs *zk.Conn, dir string, n int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d children of %s", n, dir), func() error {
		kids, _, err := obs.Children(dir)
		if err == nil && len(kids) != n {
			err = fmt.Errorf("%d children: %v", len(kids), kids)
		}
		return err
	})
}

// TestUnlockWithShortDeadlineEndsTheHold: Unlock whose deadline (100 ms)
// is shorter than the reply time (300 ms) sends the delete, which applies.
// When Unlock returns, the hold must be over: Held is false, the hold's
// Done is closed and its Context cancelled, the error says both the
// deadline and that the outcome is unknown, the node goes (server's view),
// the next Lock of the same Mutex makes a new node instead of re-entering
// the deleted one, and once that is released a further Unlock says
// ErrNotLocked.
func TestUnlockWithShortDeadlineEndsTheHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	p := ens.Proxy(t)
	m := newMutex(t, open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second)), lock)
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done, hctx, node, token := m.Done(), m.Context(), m.Node(), m.Token()

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
	if !closed(done) {
		t.Error("the hold's Done is open after Unlock returned")
	}
	if hctx.Err() == nil {
		t.Error("the hold's Context is not cancelled after Unlock returned")
	}
	p.Restore()
	nodeGone(t, obs, node, 5*time.Second)

	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock after the unanswered Unlock: %v", err)
	}
	if m.Node() == node || m.Token() == token {
		t.Errorf("Lock re-entered the released hold (node %s, token %d) instead of making a new node", node, token)
	}
	if ok, st, err := obs.Exists(m.Node()); err != nil || !ok || st.Czxid != m.Token() {
		t.Errorf("Lock returned nil but its node %s is not on the server (exists=%v, err=%v)", m.Node(), ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("Unlock of the new hold: %v", err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrNotLocked) {
		t.Errorf("Unlock without a hold = %v, want ErrNotLocked", err)
	}
}

// handoverStats runs n handovers of a lock between two Mutexes on their
// own clients: the holder unlocks while the other waits in Lock. At the
// moment the waiter's Lock returns, the unlocking hold's Done (taken while
// it was held and checked open before the Unlock) must already be closed.
// When delay is set, the unlocking client's answers are delayed by it
// (its session stays trusted: delay is well under the session timeout's
// suspension threshold). It returns how many handovers broke the rule.
func handoverStats(t *testing.T, n int, delay time.Duration) int {
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	ctx := ctxFor(t, 3*time.Minute)
	var ms [2]*mutex.Mutex
	var ps [2]*zktest.Proxy
	for i := range ms {
		ps[i] = ens.Proxy(t)
		ms[i] = newMutex(t, open(t, ps[i].Servers(), connection.WithSessionTimeout(10*time.Second)), lock)
	}
	if err := ms[0].Lock(ctx); err != nil {
		t.Fatal(err)
	}
	type result struct {
		err        error
		doneClosed bool
	}
	holder, bad := 0, 0
	for i := range n {
		waiter := 1 - holder
		prevDone := ms[holder].Done()
		if closed(prevDone) {
			t.Fatalf("handover %d: the holder's Done closed before its Unlock; the check would prove nothing", i)
		}
		res := make(chan result, 1)
		go func() {
			err := ms[waiter].Lock(ctx)
			res <- result{err, closed(prevDone)} // looked at the instant Lock returned
		}()
		childCount(t, obs, lock, 2) // the waiter is queued behind the holder
		if delay > 0 {
			ps[holder].DelayReplies(delay)
		}
		uerr := ms[holder].Unlock(ctx)
		ps[holder].Restore()
		r := <-res
		if uerr != nil || r.err != nil {
			t.Fatalf("handover %d: Unlock = %v, Lock = %v", i, uerr, r.err)
		}
		if !r.doneClosed {
			bad++
		}
		holder = waiter
	}
	if err := ms[holder].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return bad
}

// TestUnlockEndsTheHoldBeforeTheNextHolderLocks: Done closes before the
// delete leaves the client, so the next holder, woken by the delete,
// never holds while the previous hold's Done is open — with no fault, and
// with the unlocking client's answers delayed 1.5 s.
func TestUnlockEndsTheHoldBeforeTheNextHolderLocks(t *testing.T) {
	t.Parallel()
	t.Run("no faults", func(t *testing.T) {
		t.Parallel()
		const n = 100
		if bad := handoverStats(t, n, 0); bad > 0 {
			t.Errorf("in %d of %d handovers the next holder's Lock returned while the unlocking hold's Done was open", bad, n)
		}
	})
	t.Run("unlocker's answers delayed 1.5s", func(t *testing.T) {
		t.Parallel()
		const n = 3
		if bad := handoverStats(t, n, 1500*time.Millisecond); bad > 0 {
			t.Errorf("in %d of %d handovers the next holder's Lock returned while the unlocking hold's Done was open", bad, n)
		}
	})
}

// TestMutexesOfOneClientExcludeEachOther: eight Mutex values on one shared
// client (one client per process is the normal shape) take the lock 200
// times in all. Whenever a Lock returns, no other Mutex's hold may have
// its Done open: the previous holder's Unlock must have closed it before
// its delete could wake this one.
func TestMutexesOfOneClientExcludeEachOther(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	const participants, rounds = 8, 25
	var (
		mu       sync.Mutex
		holding  = map[int]<-chan struct{}{} // participant -> Done of its hold, until its Unlock returned
		overlaps []string
		errs     []error
	)
	var wg sync.WaitGroup
	for i := range participants {
		m := newMutex(t, c, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := m.Lock(ctx); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("participant %d round %d: Lock: %w", i, r, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				for other, done := range holding {
					if !closed(done) {
						overlaps = append(overlaps, fmt.Sprintf("participant %d locked while %d's Done was open", i, other))
					}
				}
				holding[i] = m.Done()
				mu.Unlock()
				err := m.Unlock(ctx)
				mu.Lock()
				delete(holding, i)
				mu.Unlock()
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("participant %d round %d: Unlock: %w", i, r, err))
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(overlaps) > 0 {
		t.Errorf("%d of %d locks overlapped another participant's open Done, e.g. %v",
			len(overlaps), participants*rounds, overlaps[:min(len(overlaps), 3)])
	}
}

// TestNodeDeletedByAnotherClientEndsTheHold: an operator deletes the lock
// node of a waiter and then the holder's. The holder's Done must close
// (its node, hence its hold, is gone), and the waiter's Lock must never
// return holding a node that does not exist.
func TestNodeDeletedByAnotherClientEndsTheHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	h := newMutex(t, open(t, ens.Servers()), lock)
	w := newMutex(t, open(t, ens.Servers()), lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- w.Lock(ctx) }()
	childCount(t, obs, lock, 2)
	kids, _, err := obs.Children(lock)
	if err != nil {
		t.Fatal(err)
	}
	var waiterNode string
	for _, k := range kids {
		if lock+"/"+k != h.Node() {
			waiterNode = lock + "/" + k
		}
	}
	// The operator: the waiter's node first, then the holder's.
	if err := obs.Delete(waiterNode, -1); err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(h.Node(), -1); err != nil {
		t.Fatal(err)
	}

	select {
	case <-h.Done():
	case <-time.After(3 * time.Second):
		t.Errorf("the holder's Done is still open 3 s after its node %s was deleted", h.Node())
	}
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("the waiter's Lock = %v, want it to take the free lock with a node of its own", err)
			break
		}
		if w.Node() == waiterNode {
			t.Errorf("the waiter's Lock returned holding its deleted node %s", waiterNode)
		}
		if ok, st, err := obs.Exists(w.Node()); err != nil || !ok || st.Czxid != w.Token() {
			t.Errorf("the waiter's Lock returned nil holding %s, which is not on the server (exists=%v, err=%v)", w.Node(), ok, err)
		}
		_ = w.Unlock(ctx)
	case <-time.After(5 * time.Second):
		t.Error("the waiter's Lock did not return within 5 s of the lock being freed")
	}
	_ = h.Unlock(ctx)
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

// TestUnlockWithDoneContextEndsTheHold: after Unlock returns, whatever the
// error, the hold is over — Held false, Done closed, a second Unlock says
// ErrNotLocked — also when the caller's context had already ended (a
// shutdown path, a handler whose deadline passed); the node still goes, in
// its session.
func TestUnlockWithDoneContextEndsTheHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	c := open(t, ens.Servers())
	m := newMutex(t, c, lock)
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done, node := m.Done(), m.Node()

	dead, cancel := context.WithCancel(ctx)
	cancel()
	err := m.Unlock(dead)
	t.Logf("Unlock(done context) = %v", err)
	if m.Held() {
		t.Error("Held() is true after Unlock returned: the hold was not ended")
	}
	if !closed(done) {
		t.Error("the hold's Done is open after Unlock returned")
	}
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrNotLocked) {
		t.Errorf("a second Unlock = %v, want ErrNotLocked", err)
	}
	// The node must still go, in its session.
	nodeGone(t, obs, node, 5*time.Second)
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

// TestWaiterNeverHoldsWithoutItsNode: a waiter watches its own node and
// never holds once that node is gone. An operator asks a waiter to let go
// (writes __REVOKE__ to its node, as Curator's Revoker does) and clears the
// lock directory (waiter's node, then holder's) in one transaction. The
// waiter's own-node watch fires for the data change — a one-shot watch that
// then says nothing of the deletion that followed — so a watch fired by a
// data change is no proof that the node is still there: were it taken for
// one, a waiter that meets the predecessor's deletion first would take the
// 0-RTT handoff and Lock would return nil with no node on the server (any
// newcomer holding the lock too).
//
// Whether the waiter meets the predecessor's deletion first is a race
// between the client's receive loop (which has the notifications in hand)
// and the waiter's goroutine, then Go's random choice among ready cases.
// On a busy machine the receive loop runs on: the test runs with
// GOMAXPROCS=1 for that (not in parallel with other tests), over ten
// rounds.
func TestWaiterNeverHoldsWithoutItsNode(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs := ens.Conn(t)
	hc := open(t, ens.Servers())
	p := ens.Proxy(t)
	wc := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 3*time.Minute)
	bad := 0
	const rounds = 10
	for i := range rounds {
		lock := path.Join(root, "lock", string(rune('a'+i)))
		h := newMutex(t, hc, lock)
		w := newMutex(t, wc, lock)
		if err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		hnode := h.Node()
		// A node that is no contender keeps the directory (a container)
		// from going when the contenders are deleted.
		if _, err := obs.Create(lock+"/keep", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		p.DelayReplies(400 * time.Millisecond)
		errc := make(chan error, 1)
		go func() { errc <- w.Lock(ctx) }()
		// Wait until the waiter has set both its watches (its own node's
		// and its predecessor's): the answer to the last is still held
		// back by the proxy.
		sid := wc.Session().ID()
		zktest.Eventually(t, 10*time.Second, "the waiter's two watches on the server", func() error {
			if n := testkit.ServerWatches(t, ens, sid); n < 2 {
				return fmt.Errorf("%d watches", n)
			}
			return nil
		})
		kids, _, err := obs.Children(lock)
		if err != nil {
			t.Fatal(err)
		}
		var wnode string
		for _, k := range kids {
			if path.Join(lock, k) != hnode && k != "keep" {
				wnode = path.Join(lock, k)
			}
		}
		// From now on what the server sends comes at once, right behind
		// the answer still held back.
		p.DelayReplies(0)
		if _, err := obs.Multi(
			&zk.SetDataRequest{Path: wnode, Data: []byte("__REVOKE__"), Version: -1},
			&zk.DeleteRequest{Path: wnode, Version: -1},
			&zk.DeleteRequest{Path: hnode, Version: -1},
		); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("round %d: waiter's Lock: %v", i, err)
		}
		ok, st, err := obs.Exists(w.Node())
		if err != nil {
			t.Fatal(err)
		}
		if !ok || st.Czxid != w.Token() {
			bad++
			t.Errorf("round %d: Lock returned nil holding %s, which is not on the server (its old node %s was deleted before the holder's)", i, w.Node(), wnode)
		}
		uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = w.Unlock(uctx)
		_ = h.Unlock(uctx)
		cancel()
	}
	t.Logf("%d of %d rounds held without a node", bad, rounds)
}

// tlog writes a client's log to the test's.
type tlog struct{ t *testing.T }

func (w tlog) Write(b []byte) (int, error) { w.t.Log(strings.TrimSpace(string(b))); return len(b), nil }
