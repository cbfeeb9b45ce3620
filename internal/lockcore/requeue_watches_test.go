package lockcore_test

// Waiters that give up and queue again, many times, behind a holder that
// does not move: their watches, set in one setWatches after each listing
// and shared with any pending watch of the session (connection.WatchData),
// must not pile up on the client or on the server, their nodes must not
// be left behind, and the waiters that stay must not miss their turn.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// sessionWatches returns the paths the servers hold a watch on for session
// id (the wchc four-letter word, summed over the servers).
func sessionWatches(t *testing.T, servers []string, id int64) []string {
	t.Helper()
	var out []string
	want := fmt.Sprintf("0x%x", id)
	for _, s := range servers {
		text, err := zktest.FourLetter(s, "wchc", 5*time.Second)
		if err != nil {
			t.Fatalf("wchc of %s: %v", s, err)
		}
		in := false
		for _, line := range strings.Split(text, "\n") {
			switch {
			case strings.HasPrefix(line, "0x"):
				in = strings.TrimSpace(line) == want
			case in && strings.TrimSpace(line) != "":
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	return out
}

// TestWaitersGivingUpKeepOneWatchPerNode: a holder of one client holds;
// two waiters of another client queue behind it and stay; six more
// waiters of that client queue and give up (a context of 1 to 40 ms) 40
// times each, so that many give up in the middle of their create, their
// listing or their setWatches. Then: the server holds a watch of the
// waiters' session on no node but the holder's and the two staying
// waiters' (each deleted node's watch fired, each live node's watch is
// one), the client has at most one pending watch per node, no node of a
// waiter that gave up is left, and on the holder's release the two
// staying waiters take the lock in turn, then each of the six once.
func TestWaitersGivingUpKeepOneWatchPerNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	hc, wc := open(t, ens.Servers()), open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	h := newLock(t, hc, lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	queued := func(n int) []string {
		var kids []string
		zktest.Eventually(t, 20*time.Second, fmt.Sprintf("%d contenders", n), func() error {
			var err error
			kids, _, err = obs.Children(lock)
			if err == nil && len(kids) != n {
				err = fmt.Errorf("%d contenders: %v", len(kids), kids)
			}
			return err
		})
		return kids
	}
	stay := []*testLock{newLock(t, wc, lock), newLock(t, wc, lock)}
	stayErr := make(chan error, 2)
	for i, m := range stay {
		go func() { stayErr <- m.Lock(ctx) }()
		queued(2 + i)
	}
	before := wc.Stats()
	const quitters, rounds = 6, 40
	quit := make([]*testLock, quitters)
	var wg sync.WaitGroup
	errs := make(chan error, quitters)
	for i := range quit {
		quit[i] = newLock(t, wc, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 5))
			for range rounds {
				lctx, cancel := context.WithTimeout(ctx, time.Duration(1+rng.IntN(40))*time.Millisecond)
				err := quit[i].Lock(lctx)
				cancel()
				if err == nil {
					errs <- fmt.Errorf("quitter %d locked while the holder holds", i)
					return
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					errs <- fmt.Errorf("quitter %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// No node of a quitter is left (Abandon, or its background delete).
	kids := queued(3)
	live := map[string]bool{}
	for _, k := range kids {
		live[connx.Of(wc).ServerPath(path.Join(lock, k))] = true
	}
	id := wc.Session().ID()
	zktest.Eventually(t, 20*time.Second, "the waiters' session watches only live nodes", func() error {
		ws := sessionWatches(t, ens.Servers(), id)
		for _, p := range ws {
			if !live[p] {
				return fmt.Errorf("a watch on %s, which is not a live contender (all: %v)", p, ws)
			}
		}
		if len(ws) > len(live) {
			return fmt.Errorf("%d watches for %d nodes: %v", len(ws), len(live), ws)
		}
		return nil
	})
	after := wc.Stats()
	t.Logf("server watches of the waiters' session: %v; pending on the client %d (before the quitters %d); notifications %d",
		sessionWatches(t, ens.Servers(), id), after.PendingWatches, before.PendingWatches, after.Notifications-before.Notifications)
	if after.PendingWatches > len(live) {
		t.Errorf("the waiters' client has %d pending watches for %d live nodes", after.PendingWatches, len(live))
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range stay {
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		var err error
		select {
		case err = <-stayErr:
		case <-lctx.Done():
			err = errors.New("a staying waiter missed its turn: no Lock returned in 20 s")
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var holder *testLock
		for _, m := range stay {
			if m.Held() {
				holder = m
			}
		}
		if holder == nil {
			t.Fatal("Lock returned and no staying waiter holds")
		}
		if first, err := firstContender(obs, lock); err != nil || first != holder.Node() {
			t.Fatalf("%s holds, the server's first contender is %s (%v)", holder.Node(), first, err)
		}
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range quit {
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := m.Lock(lctx)
		cancel()
		if err != nil {
			t.Fatalf("quitter %d, alone: %v", i, err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if kids, _, err := obs.Children(lock); err != nil && !errors.Is(err, zk.ErrNoNode) || len(kids) != 0 {
		t.Errorf("left in the lock directory: %v (%v)", kids, err)
	}
}

// TestWaitersGivingUpDuringHandoffsLeaveNoWatch: six participants of one
// client and two of another take and release one lock in a loop, most
// attempts with a context of 2 to 40 ms, so that waiters give up in the
// middle of their create, listing or setWatches while the lock moves. No
// two hold at once (Done, and the server's first contender); once all
// stop, the directory is empty and neither the server nor the clients
// keep a watch of the waiters: every watch was on a contender's node,
// and each went.
func TestWaitersGivingUpDuringHandoffsLeaveNoWatch(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	view := ens.Conn(t)
	clients := []*connection.Client{open(t, ens.Servers()), open(t, ens.Servers())}
	ctx := ctxFor(t, 3*time.Minute)
	log := &holdLog{holding: map[*testLock]<-chan struct{}{}}
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		errs     []error
		gaveUp   atomic.Int32
		lockedN  atomic.Int32
		deadline = time.Now().Add(8 * time.Second)
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	for i := range 8 {
		c := clients[0]
		if i >= 6 {
			c = clients[1]
		}
		m := newLock(t, c, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(10+i)))
			for time.Now().Before(deadline) {
				d := time.Duration(2+rng.IntN(38)) * time.Millisecond
				if rng.IntN(3) == 0 {
					d = 10 * time.Second
				}
				lctx, cancel := context.WithTimeout(ctx, d)
				err := m.Lock(lctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						fail(fmt.Errorf("participant %d: %w", i, err))
						return
					}
					gaveUp.Add(1)
					continue
				}
				lockedN.Add(1)
				log.locked(m, fmt.Sprint("participant ", i))
				if first, err := firstContender(view, lock); err == nil && first != m.Node() {
					fail(fmt.Errorf("participant %d holds %s, the server's first contender is %s", i, m.Node(), first))
				}
				time.Sleep(time.Millisecond)
				log.unlocking(m)
				if err := m.Unlock(ctx); err != nil {
					fail(fmt.Errorf("participant %d: Unlock: %w", i, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	log.mu.Lock()
	if len(log.overlaps) > 0 {
		t.Errorf("%d overlaps, e.g. %v", len(log.overlaps), log.overlaps[:min(3, len(log.overlaps))])
	}
	log.mu.Unlock()
	t.Logf("%d locks, %d attempts given up", lockedN.Load(), gaveUp.Load())
	zktest.Eventually(t, 20*time.Second, "an empty lock directory", func() error {
		kids, _, err := view.Children(lock)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err == nil && len(kids) > 0 {
			err = fmt.Errorf("left: %v", kids)
		}
		return err
	})
	for i, c := range clients {
		id := c.Session().ID()
		zktest.Eventually(t, 20*time.Second, fmt.Sprintf("client %d keeps no watch", i), func() error {
			if ws := sessionWatches(t, ens.Servers(), id); len(ws) > 0 {
				return fmt.Errorf("the server keeps watches of the session: %v", ws)
			}
			if n := c.Stats().PendingWatches; n > 0 {
				return fmt.Errorf("%d pending watches on the client", n)
			}
			return nil
		})
	}
}
