package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
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
		holders      atomic.Int32
		mu           sync.Mutex
		fails        []string
		lastSeq      = int32(-1)
		wg           sync.WaitGroup
		held, gaveUp atomic.Int32
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		fails = append(fails, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	p.Delay(200 * time.Millisecond)
	for i := range waiters {
		m := newLock(t, wc, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx := ctx
			if i%4 == 0 {
				var cancel context.CancelFunc
				wctx, cancel = context.WithTimeout(ctx, time.Duration(100+10*i)*time.Millisecond)
				defer cancel()
			}
			if err := m.Lock(wctx); err != nil {
				if wctx.Err() == nil || !errors.Is(err, wctx.Err()) {
					fail("waiter %d: Lock: %v", i, err)
				}
				gaveUp.Add(1)
				return
			}
			if n := holders.Add(1); n != 1 {
				fail("waiter %d: %d holders in the process", i, n)
			}
			if first, err := firstContender(obs, lock); (err != nil || first != m.Node()) && !closed(m.Done()) {
				fail("waiter %d: holds %s, the server's first is %s (%v)", i, m.Node(), first, err)
			}
			c, ok := lockcore.Parse(path.Base(m.Node()))
			mu.Lock()
			if !ok || c.N <= lastSeq {
				fails = append(fails, fmt.Sprintf("waiter %d: holds %s after a holder of sequence %d", i, m.Node(), lastSeq))
			}
			lastSeq = c.N
			mu.Unlock()
			holders.Add(-1)
			if err := m.Unlock(ctx); err != nil {
				fail("waiter %d: Unlock: %v", i, err)
			}
			held.Add(1)
		}()
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
	if holders.Load() != 0 {
		t.Error("a waiter holds while the holder's node is first")
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(90 * time.Second):
		testkit.LogGoroutines(t, "waiters still waiting")
		t.Fatalf("%d held and %d gave up of %d waiters within 90 s of the release", held.Load(), gaveUp.Load(), waiters)
	}
	t.Logf("%d held, %d gave up", held.Load(), gaveUp.Load())
	mu.Lock()
	for _, f := range fails {
		t.Error(f)
	}
	mu.Unlock()
	zktest.Eventually(t, 20*time.Second, "no node left", func() error {
		kids, _, err := obs.Children(lock)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if len(kids) != 0 {
			return fmt.Errorf("%d left, such as %v", len(kids), kids[0])
		}
		return nil
	})
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
	var (
		holders      atomic.Int32
		mu           sync.Mutex
		fails        []string
		wg           sync.WaitGroup
		held, gaveUp atomic.Int32
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		fails = append(fails, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for i := range waiters {
		m := newLock(t, wc, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx := ctx
			if i%4 == 0 {
				var cancel context.CancelFunc
				wctx, cancel = context.WithTimeout(ctx, time.Duration(200+30*i)*time.Millisecond)
				defer cancel()
			}
			if err := m.Lock(wctx); err != nil {
				if wctx.Err() == nil {
					fail("waiter %d: Lock: %v", i, err)
				}
				gaveUp.Add(1)
				return
			}
			if n := holders.Add(1); n != 1 {
				fail("waiter %d: %d holders in the process", i, n)
			}
			if kids, _, err := wc.Children(ctx, lock); err == nil && !closed(m.Done()) {
				cs := lockcore.Sort(kids, lockcore.MutexKinds)
				if len(cs) == 0 || path.Join(lock, cs[0].Name) != m.Node() {
					fail("waiter %d: holds %s, its client lists %v first", i, m.Node(), cs[:min(1, len(cs))])
				}
			}
			holders.Add(-1)
			_ = m.Unlock(ctx)
			held.Add(1)
		}()
	}
	time.Sleep(150 * time.Millisecond)
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(90 * time.Second):
		testkit.LogGoroutines(t, "waiters still waiting")
		t.Fatalf("%d held and %d gave up of %d waiters within 90 s of the restore", held.Load(), gaveUp.Load(), waiters)
	}
	t.Logf("%d held, %d gave up", held.Load(), gaveUp.Load())
	mu.Lock()
	for _, f := range fails {
		t.Error(f)
	}
	mu.Unlock()
	obs := ens.Conn(t)
	zktest.Eventually(t, 20*time.Second, "no waiter's node left", func() error {
		kids, _, err := obs.Children(lock)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if len(kids) > 1 {
			return fmt.Errorf("%d left, such as %v", len(kids), kids[0])
		}
		if len(kids) == 1 && h.Held() && path.Join(lock, kids[0]) == h.Node() {
			return nil // the first holder's, if it still holds
		}
		if len(kids) == 1 {
			return fmt.Errorf("left %v", kids[0])
		}
		return nil
	})
}
