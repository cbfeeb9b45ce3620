package lockcore_test

import (
	"errors"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestBurstOfWaitersOverAFaultyLinkHoldInTurn: hundreds of waiters of one
// client join a held lock at once over a slow link, which then goes
// silent for less than the session timeout and comes back (its
// connection reset): each waiter either holds — alone in the process,
// first on the server (another client looks), in the order of its node's
// sequence — or returns its context's error, and once all are done no
// node of theirs is left.
func TestBurstOfWaitersOverAFaultyLinkHoldInTurn(t *testing.T) {
	testkit.SkipHeavy(t)
	for _, tc := range []struct {
		name          string
		timeout       time.Duration
		before, fault time.Duration
		drop          bool
	}{
		{name: "silent while joining", timeout: 8 * time.Second, before: 50 * time.Millisecond, fault: 2 * time.Second},
		{name: "silent once joined", timeout: 8 * time.Second, before: 600 * time.Millisecond, fault: 2 * time.Second},
		{name: "answers dropped while joining", timeout: 8 * time.Second, before: 100 * time.Millisecond, fault: time.Second, drop: true},
		{name: "silent past the session", timeout: 3 * time.Second, before: 100 * time.Millisecond, fault: 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) { burstOverFaultyLink(t, tc.timeout, tc.before, tc.fault, tc.drop) })
	}
}

func burstOverFaultyLink(t *testing.T, timeout, before, fault time.Duration, drop bool) {
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	p, err := zkserver.NewProxy(ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := ctxFor(t, 3*time.Minute)
	hc := open(t, ens.Servers())
	wc := open(t, p.Servers(), connection.WithSessionTimeout(timeout))
	h := newLock(t, hc, lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 240
	var (
		burst   testkit.Burst
		mu      sync.Mutex
		lastSeq = int32(-1)
	)
	p.Delay(200 * time.Millisecond)
	for i := range waiters {
		m := newLock(t, wc, lock)
		burst.Go(func() {
			wctx, cancel := burst.Context(ctx, i, 4, 100*time.Millisecond, 10*time.Millisecond)
			defer cancel()
			if err := m.Lock(wctx); err != nil {
				if wctx.Err() == nil || !errors.Is(err, wctx.Err()) {
					burst.Fail("waiter %d: Lock: %v", i, err)
				}
				burst.GaveUp.Add(1)
				return
			}
			burst.Enter(i)
			if first, err := firstContender(obs, lock); (err != nil || first != m.Node()) && !closed(m.Done()) {
				burst.Fail("waiter %d: holds %s, the server's first is %s (%v)", i, m.Node(), first, err)
			}
			c, ok := layout.Parse(path.Base(m.Node()))
			mu.Lock()
			if !ok || c.N <= lastSeq {
				burst.Fail("waiter %d: holds %s after a holder of sequence %d", i, m.Node(), lastSeq)
			}
			lastSeq = c.N
			mu.Unlock()
			burst.Leave()
			if err := m.Unlock(ctx); err != nil {
				burst.Fail("waiter %d: Unlock: %v", i, err)
			}
			burst.Held.Add(1)
		})
	}
	time.Sleep(before)
	if drop {
		p.DropReplies()
	} else {
		p.Blackhole()
	}
	time.Sleep(fault)
	p.Restore()
	time.Sleep(500 * time.Millisecond)
	if burst.Holders() != 0 {
		t.Error("a waiter holds while the holder's node is first")
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	burst.Wait(t, waiters, 90*time.Second, "the release")
	testkit.NoChildrenLeft(t, obs, lock, 20*time.Second, nil)
}

// TestBurstOfWaitersAcrossADatabaseRestore: waiters of one client join a
// held lock at once, and while their creates and listings are in flight
// the ensemble's database is replaced by a backup taken before they
// joined: sessions go and new ones come, in a history where their nodes
// never were. No two waiters hold at once (in the process, and as the
// holder's client lists the lock), every waiter ends holding or with its
// context's error, and no node is left.
func TestBurstOfWaitersAcrossADatabaseRestore(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	ctx := ctxFor(t, 3*time.Minute)
	lock := "/restoreburst/lock"
	hc := open(t, ens.Servers(), connection.WithSessionTimeout(3*time.Second))
	wc := open(t, ens.Servers(), connection.WithSessionTimeout(3*time.Second))
	h := newLock(t, hc, lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 120
	var burst testkit.Burst
	for i := range waiters {
		m := newLock(t, wc, lock)
		burst.Go(func() {
			wctx, cancel := burst.Context(ctx, i, 4, 200*time.Millisecond, 30*time.Millisecond)
			defer cancel()
			if err := m.Lock(wctx); err != nil {
				if wctx.Err() == nil {
					burst.Fail("waiter %d: Lock: %v", i, err)
				}
				burst.GaveUp.Add(1)
				return
			}
			burst.Enter(i)
			if kids, _, err := wc.Children(ctx, lock); err == nil && !closed(m.Done()) {
				cs := layout.Sort(kids, layout.MutexKinds)
				if len(cs) == 0 || path.Join(lock, cs[0].Name) != m.Node() {
					burst.Fail("waiter %d: holds %s, its client lists %v first", i, m.Node(), cs[:min(1, len(cs))])
				}
			}
			burst.Leave()
			_ = m.Unlock(ctx)
			burst.Held.Add(1)
		})
	}
	time.Sleep(150 * time.Millisecond)
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	burst.Wait(t, waiters, 90*time.Second, "the restore")
	// The first holder's node may be left, if it still holds.
	testkit.NoChildrenLeft(t, ens.Conn(t), lock, 20*time.Second, func(k string) bool {
		return h.Held() && path.Join(lock, k) == h.Node()
	})
}
