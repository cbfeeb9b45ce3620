package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/retry"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestOwnSoonWatchFailsThenNodeDeleted tests the hold handed out before
// its own node's watch is answered (lockcore Acquired.OwnSoon). Under
// SessionPolicy a cut does not end the hold's trusted period. The fault
// hits the connection right after Lock returned, while that watch's read
// is on its way; during the fault an operator deletes the node. The hold
// is lost, and its Done must close (docs/locks.md: "a hold ends when
// someone else deletes its node").
//
// In "cut, no retry", with a retry policy that does not retry
// (retry.NTimes(0, 0)), the watch's read fails with "zk: connection
// closed" while the session lives. That error does not mean the session
// ended or cannot be trusted — not under SessionPolicy — so the hold must
// not take it for "the hold's period ends it" and be left with no watch
// on its node, its Done never closing: a hold whose node's watch cannot
// be set ends (Hold.unwatched). In "replies dropped, default retry" the
// read is retried in the session and finds the node gone; in "cut past
// the session timeout" the session's end ends the hold.
func TestOwnSoonWatchFailsThenNodeDeleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		retry   retry.Policy
		fault   func(p *zktest.Proxy)
		timeout time.Duration // the session's
		cut     time.Duration // how long the fault lasts
	}{
		{"cut, no retry", retry.NTimes(0, 0), (*zktest.Proxy).Cut, 10 * time.Second, time.Second},
		{"replies dropped, default retry", connection.DefaultRetryPolicy(), (*zktest.Proxy).DropReplies, 10 * time.Second, time.Second},
		// The session expires during the cut: its node goes with it.
		{"cut past the session timeout, no retry", retry.NTimes(0, 0), (*zktest.Proxy).Cut, 2 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ens := shared.Ensemble(t)
			root := ens.Root(t)
			p := ens.Proxy(t)
			a := open(t, p.Servers(), connection.WithSessionTimeout(tc.timeout),
				connection.WithErrorPolicy(connection.SessionPolicy),
				connection.WithRetryPolicy(tc.retry))
			ctx := ctxFor(t, time.Minute)
			obs := ens.Conn(t)
			m := newLock(t, a, root+"/lock")
			// The directory's first node (number 0) holds without a
			// listing: take it once, so that the next one is decided by
			// the first listing.
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}

			// Every byte takes 150 ms each way: the create and the first
			// listing are answered together, and the node's watch, sent
			// once the create is answered, is still on its way when Lock
			// returns.
			p.Delay(150 * time.Millisecond)
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			node := m.Node()
			tc.fault(p)
			time.Sleep(tc.cut / 2)
			if err := obs.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				t.Fatal(err)
			}
			time.Sleep(tc.cut / 2)
			p.Restore()
			select {
			case <-m.Done():
			case <-time.After(5 * time.Second):
				_, gerr := a.Multi(ctx, m.Guard())
				t.Fatalf("the hold's node was deleted 5 s ago and Done is still open (a guarded write: %v)", gerr)
			}
			if err := m.Unlock(ctx); !errors.Is(err, errLockLost) {
				t.Errorf("Unlock after the loss: %v, want ErrLockLost", err)
			}
		})
	}
}

// TestRewatchFailsThenNodeDeleted is the same case in Hold.rewatch: a
// write to the held node (a revocation's, an operator's) spends the
// node's watch, and the hold sets it again with a read. Under
// SessionPolicy, with a retry policy that does not retry, a cut makes
// that read fail while the session lives. Were the hold left with no
// watch, it would be unsure for good: every guarded write would wait
// until its context ends (connection's settled waits "one round trip"
// for an unsure hold), and when the node is then deleted, Done would
// never close. A hold whose node's watch cannot be set ends
// (Hold.unwatched), so the guarded write is refused at once and Done is
// closed.
func TestRewatchFailsThenNodeDeleted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	a := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second),
		connection.WithErrorPolicy(connection.SessionPolicy),
		connection.WithRetryPolicy(retry.NTimes(0, 0)))
	ctx := ctxFor(t, time.Minute)
	obs := ens.Conn(t)
	m := newLock(t, a, root+"/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	node := m.Node()
	// 150 ms each way: the write's notification reaches the client 150 ms
	// after the write, and the read that sets the watch again is answered
	// 300 ms after that; the cut falls in between.
	p.Delay(150 * time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	if _, err := obs.Set(node, []byte("operator"), -1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	p.Cut()
	time.Sleep(500 * time.Millisecond)
	p.Restore()
	// The node is still the hold's, in its session: a guarded write
	// commits, or is refused, within the round trip the hold takes to
	// settle — not by its context running out.
	if _, _, err := a.Exists(ctx, root); err != nil {
		t.Fatal(err)
	}
	gctx, gcancel := context.WithTimeout(ctx, 3*time.Second)
	_, gerr := a.Multi(gctx, m.Guard())
	waited := gctx.Err() != nil
	gcancel()
	if waited {
		t.Errorf("a guarded write of a hold whose node is there waited 3 s, until its context ended: %v", gerr)
	}
	// The hold may have ended already and deleted its node (it could not
	// set the watch): then the node is gone before the operator's delete.
	if err := obs.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("the hold's node was deleted 5 s ago and Done is still open")
	}
	if err := m.Unlock(ctx); !errors.Is(err, errLockLost) {
		t.Errorf("Unlock after the loss: %v, want ErrLockLost", err)
	}
}

// TestFastPathHoldersAgainstTheServer checks "never two holders" against
// the server's view while holds are handed out at their first listing:
// six participants, three on each of two clients (one behind a 2 ms
// proxy), take the lock in turn; inside each hold an observer's listing
// must show the holder's node first in the queue, and the tokens (czxids)
// must grow from hold to hold.
func TestFastPathHoldersAgainstTheServer(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	p := ens.Proxy(t)
	p.Delay(2 * time.Millisecond)
	clients := []*connection.Client{open(t, ens.Servers()), open(t, p.Servers())}
	ctx := ctxFor(t, 2*time.Minute)
	var (
		mu        sync.Mutex
		lastToken int64
		holds     int
	)
	var wg sync.WaitGroup
	for i := range 6 {
		m := newLock(t, clients[i%2], lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if err := m.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				kids, _, err := obs.Children(lock)
				if err != nil {
					t.Error(err)
				}
				first := ""
				for _, k := range kids {
					if first == "" || k[len(k)-10:] < first[len(first)-10:] {
						first = k
					}
				}
				if lock+"/"+first != m.Node() && !closed(m.Done()) {
					t.Errorf("a trusted hold of %s while the server's first node is %s", m.Node(), first)
				}
				mu.Lock()
				if m.Token() <= lastToken {
					t.Errorf("token %#x after %#x", m.Token(), lastToken)
				}
				lastToken = m.Token()
				holds++
				mu.Unlock()
				if err := m.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d holds", holds)
}

// TestUnlockBeforeTheOwnWatchIsAnswered unlocks a hold handed out at its
// first listing while its node's watch is still on its way (150 ms each
// way), with a second participant of the same client waiting: the Unlock
// must release our node only, the waiter must then hold, and nothing may
// be left.
func TestUnlockBeforeTheOwnWatchIsAnswered(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, time.Minute)
	m1, m2 := newLock(t, c, lock), newLock(t, c, lock)
	if err := m1.Lock(ctx); err != nil { // number 0, without a listing
		t.Fatal(err)
	}
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	p.Delay(150 * time.Millisecond)
	for range 3 {
		if err := m1.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		locked := make(chan error, 1)
		go func() { locked <- m2.Lock(ctx) }()
		if err := m1.Unlock(ctx); err != nil {
			t.Fatalf("Unlock in the window: %v", err)
		}
		if err := <-locked; err != nil {
			t.Fatal(err)
		}
		if closed(m2.Done()) {
			t.Fatal("the waiter's hold ended")
		}
		if err := m2.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	zktest.Eventually(t, 10*time.Second, "no node left", func() error {
		kids, _, err := obs.Children(lock)
		if errors.Is(err, zk.ErrNoNode) {
			return nil // the container went, empty
		}
		if err == nil && len(kids) > 0 {
			err = errors.New(fmt.Sprint(kids))
		}
		return err
	})
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
		h, w := heldInKeptDir(t, ctx, obs, hc, wc, lock)
		hnode := h.Node()
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
