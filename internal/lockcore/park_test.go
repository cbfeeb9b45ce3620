package lockcore_test

// The parked waiter (internal/lockcore: attempt, park, the attempt as the
// Hook of its watches) under wake-ups that come between the attempt's
// steps, waiters of one client hooked on one shared watch (a node's own
// watch and its successors' watches on it are one Watch), cancellation
// racing a wake-up, spurious wake-ups from data changes, a session ending
// while a waiter is parked.

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
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestParkedWaitersSharingWatchesUnderCancelsAndWrites: ten locks on
// one lock, eight of them on one client (whose answers are delayed by 0,
// 1 or 2 ms in turn, so that events come between a waiter's steps), so that a waiter's own watch and the
// watches of the two waiters behind it (Exclusive watches P and PP) are one
// shared Watch with up to three parked attempts hooked on it. Half the
// participants ("steady") lock with a long context and must each get the
// lock every round; the others lock with a random short deadline, so that
// their waits end at random points of the others' wakes (cancel racing a
// wake, a hook removed while another's fires). Meanwhile an operator
// writes the data of random contenders' nodes: spurious wake-ups on the
// shared watches, of a waiter's own node and of its P and PP. Promises:
// never two holders (a participant that locks is alone in the process and
// first on the server), no lost wake-up (every steady round completes),
// no node left behind.
func TestParkedWaitersSharingWatchesUnderCancelsAndWrites(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	// The first client's answers come late, at times: events then arrive
	// between a waiter's steps, before it parks.
	px, err := zkserver.NewProxy(ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	ca, cb := open(t, px.Servers()), open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const participants, rounds = 10, 30
	var (
		holders  atomic.Int32
		mu       sync.Mutex
		failures []string
		steadyOK atomic.Int32
		cancels  atomic.Int32
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	stopWrites := make(chan struct{})
	var writes sync.WaitGroup
	writes.Add(1)
	go func() {
		defer writes.Done()
		rng := rand.New(rand.NewPCG(seed, 99))
		for k := 0; ; k++ {
			if k%50 == 0 {
				px.DelayReplies(time.Duration(k/50%3) * time.Millisecond)
			}
			select {
			case <-stopWrites:
				return
			case <-time.After(time.Duration(2+rng.IntN(10)) * time.Millisecond):
			}
			kids, _, err := obs.Children(lock)
			if err != nil || len(kids) == 0 {
				continue
			}
			_, _ = obs.Set(path.Join(lock, kids[rng.IntN(len(kids))]), []byte("w"), -1)
		}
	}()
	var wg sync.WaitGroup
	for i := range participants {
		c := ca
		if i >= 8 {
			c = cb
		}
		steady := i%2 == 0
		m := newLock(t, c, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for r := 0; r < rounds; {
				lctx, cancel := ctx, context.CancelFunc(func() {})
				if !steady {
					lctx, cancel = context.WithTimeout(ctx, time.Duration(1+rng.IntN(100))*time.Millisecond)
				}
				err := m.Lock(lctx)
				cancel()
				if err != nil {
					if !steady && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
						cancels.Add(1)
						r++
						continue
					}
					fail("participant %d round %d: Lock: %v", i, r, err)
					return
				}
				if n := holders.Add(1); n != 1 {
					fail("participant %d round %d: %d holders in the process", i, r, n)
				}
				if first, err := firstContender(obs, lock); err != nil || first != m.Node() {
					if !closed(m.Done()) {
						fail("participant %d round %d: holds %s, the server's first is %s (%v)", i, r, m.Node(), first, err)
					}
				}
				time.Sleep(time.Duration(rng.IntN(8)) * time.Millisecond)
				holders.Add(-1)
				if err := m.Unlock(ctx); err != nil {
					fail("participant %d round %d: Unlock: %v", i, r, err)
					return
				}
				if steady {
					steadyOK.Add(1)
				}
				r++
			}
		}()
	}
	wg.Wait()
	close(stopWrites)
	writes.Wait()
	mu.Lock()
	for _, f := range failures[:min(len(failures), 10)] {
		t.Error(f)
	}
	if len(failures) > 10 {
		t.Errorf("... %d failures in all", len(failures))
	}
	mu.Unlock()
	t.Logf("steady rounds held %d of %d; flaky waits that timed out %d", steadyOK.Load(), participants/2*rounds, cancels.Load())
	if got := steadyOK.Load(); got != participants/2*rounds {
		t.Errorf("steady rounds held %d, want %d", got, participants/2*rounds)
	}
	waitNodes(t, obs, lock, 0, 15*time.Second, "no node left")
}

// TestCancelRacingPredecessorDeletion: a waiter parked behind a holder of
// another client is cancelled at about the moment the holder releases
// (offsets from -3 ms to +3 ms). Either Lock returns nil, and then the
// waiter's node is first on the server, or it returns the context's
// error, and then its node is gone (the server's view) — never a hold
// without the node, never an orphan, never another error.
func TestCancelRacingPredecessorDeletion(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs := ens.Conn(t)
	hc, wc := open(t, ens.Servers()), open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	const rounds = 40
	var won, cancelled int
	for r := range rounds {
		lock := path.Join(root, fmt.Sprint("lock", r))
		h, w := newLock(t, hc, lock), newLock(t, wc, lock)
		if err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- w.Lock(wctx) }()
		// The waiter's node, and its watch on the holder's node, set.
		waitNodes(t, obs, lock, 2, 10*time.Second, "the waiter's node")
		time.Sleep(20 * time.Millisecond) // parked
		offset := time.Duration(r%7-3) * time.Millisecond
		var g sync.WaitGroup
		g.Add(2)
		go func() {
			defer g.Done()
			if offset > 0 {
				time.Sleep(offset)
			}
			cancel()
		}()
		go func() {
			defer g.Done()
			if offset < 0 {
				time.Sleep(-offset)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Error(err)
			}
		}()
		g.Wait()
		var err error
		select {
		case err = <-errc:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: Lock did not return 20 s after its context was cancelled", r)
		}
		switch {
		case err == nil:
			won++
			first, ferr := firstContender(obs, lock)
			if ferr != nil || first != w.Node() {
				t.Errorf("round %d: Lock returned nil holding %s, the server's first is %q (%v)", r, w.Node(), first, ferr)
			}
			if err := w.Unlock(ctx); err != nil {
				t.Error(err)
			}
		case errors.Is(err, context.Canceled):
			cancelled++
		default:
			t.Errorf("round %d: Lock = %v, want nil or context.Canceled", r, err)
		}
		waitNodes(t, obs, lock, 0, 10*time.Second, fmt.Sprintf("round %d: no node left", r))
	}
	t.Logf("%d rounds: the waiter held in %d, returned Canceled in %d", rounds, won, cancelled)
}

// TestSessionExpiresWhileParked: a waiter parked behind a holder (its
// watches set and answered) has its client silenced until the server
// expires its session; meanwhile the holder keeps the lock. The waiter must
// not hold while the holder's node is first, must queue again in its next
// session, and must hold once the holder releases — with a node of the new
// session, first on the server. In the last round the holder releases
// while the waiter is silent.
func TestSessionExpiresWhileParked(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	const timeout = 3 * time.Second
	obs, hc, wc, p := waiterBehindProxy(t, ens, timeout)
	ctx := ctxFor(t, 3*time.Minute)
	for round := range 3 {
		releaseWhileSilent := round == 2
		lock := path.Join(root, fmt.Sprint("lock", round))
		h, w, w2 := newLock(t, hc, lock), newLock(t, wc, lock), newLock(t, wc, lock)
		if err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		old := wc.Session()
		answered := make(chan struct{})
		var once sync.Once
		zkserver.LogWire(p, func(ev zkserver.WireEvent) {
			// A waiter's setWatches, right behind its listing.
			if ev.ToServer && ev.Op == opSetWatches {
				once.Do(func() { close(answered) })
			}
		})
		errc := make(chan error, 2)
		go func() { errc <- w.Lock(ctx) }()
		go func() { errc <- w2.Lock(ctx) }()
		select {
		case <-answered:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: no setWatches", round)
		}
		zkserver.LogWire(p, nil)
		waitNodes(t, obs, lock, 3, 10*time.Second, "the waiters' nodes")
		time.Sleep(300 * time.Millisecond) // both parked
		p.Blackhole()
		if releaseWhileSilent {
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		zktest.Eventually(t, 30*time.Second, "the old session's nodes gone", func() error {
			kids, _, err := obs.Children(lock)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			want := 1
			if releaseWhileSilent {
				want = 0
			}
			if len(kids) != want {
				return fmt.Errorf("contenders %v", kids)
			}
			return nil
		})
		p.Restore()
		if !releaseWhileSilent {
			waitNodes(t, obs, lock, 3, 30*time.Second, "the new session's nodes")
			time.Sleep(300 * time.Millisecond)
			if w.Held() || w2.Held() {
				t.Fatalf("round %d: a waiter holds while the holder's node is first", round)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			var err error
			select {
			case err = <-errc:
			case <-time.After(60 * time.Second):
				t.Fatalf("round %d: a waiter missed its turn (held: %v %v)", round, w.Held(), w2.Held())
			}
			if err != nil {
				t.Fatalf("round %d: Lock = %v", round, err)
			}
			var m *testLock
			switch {
			case w.Held() && w2.Held():
				t.Fatalf("round %d: both waiters hold", round)
			case w.Held():
				m = w
			case w2.Held():
				m = w2
			default:
				t.Fatalf("round %d: Lock returned nil, nothing held", round)
			}
			if first, err := firstContender(obs, lock); err != nil || first != m.Node() {
				t.Fatalf("round %d: holds %s, the server's first is %s (%v)", round, m.Node(), first, err)
			}
			if wc.Session() == old {
				t.Errorf("round %d: the session did not change", round)
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFirstListingAnswerLost: the create and the first listing behind it
// (connection.ChildrenThen) reach the server, and every answer is lost
// (the proxy drops them) until the connection is given up and made again
// in the same session. Meanwhile: the holder releases (round "release": a
// deletion between the lost listing and any watch), the holder keeps the
// lock (round "held"), or the waiter's context is cancelled (round
// "cancel": Lock must return the context's error, and leave no node;
// round "cancel listing": the create's answer is delivered and what the
// proxy reads after it is lost — the listing's answer when it comes in a
// later read, else the setWatches' — and the context is cancelled while
// the waiter waits for it). The
// waiter must hold exactly when its node is first on the server.
func TestFirstListingAnswerLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs, hc, wc, p := waiterBehindProxy(t, ens, 6*time.Second)
	ctx := ctxFor(t, 3*time.Minute)
	for _, round := range []string{"release", "held", "cancel", "cancel listing"} {
		lock := path.Join(root, strings.ReplaceAll(round, " ", "-"))
		h, w := newLock(t, hc, lock), newLock(t, wc, lock)
		if err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		sess := wc.Session()
		var (
			once      sync.Once
			createXid atomic.Int32
		)
		createXid.Store(-100)
		dropped := make(chan struct{})
		zkserver.LogWire(p, func(ev zkserver.WireEvent) {
			switch {
			case ev.ToServer && ev.Op == opCreate2:
				createXid.Store(ev.Xid)
			case round == "cancel listing" && !ev.ToServer && ev.Xid == createXid.Load():
				// The create's answer is delivered (it is read in this
				// chunk); the listing's, in a later one, is lost.
				once.Do(func() {
					p.DropReplies()
					close(dropped)
				})
			case round != "cancel listing" && ev.ToServer && ev.Op == opGetChildren:
				// The listing right behind the create: it goes on, its
				// answer and the create's are lost.
				once.Do(func() {
					p.DropReplies()
					close(dropped)
				})
			}
		})
		wctx, cancel := context.WithCancel(ctx)
		errc := lockUntil(t, wctx, w, dropped, fmt.Sprintf("%s: no listing", round))
		zkserver.LogWire(p, nil)
		waitNodes(t, obs, lock, 2, 10*time.Second, "the waiter's node")
		var cancelledAt time.Time
		switch round {
		case "release":
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		case "cancel", "cancel listing":
			cancelledAt = time.Now()
			cancel()
		}
		time.Sleep(300 * time.Millisecond)
		if round == "held" && w.Held() {
			t.Fatalf("%s: the waiter holds while the holder's node is first", round)
		}
		p.Restore()
		if round == "held" {
			time.Sleep(time.Second)
			if w.Held() {
				t.Fatalf("%s: the waiter holds while the holder's node is first", round)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		select {
		case err = <-errc:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Lock did not return", round)
		}
		cancel()
		if strings.HasPrefix(round, "cancel") {
			t.Logf("%s: Lock returned %v after %v", round, err, time.Since(cancelledAt).Round(time.Millisecond))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: Lock = %v, want context.Canceled", round, err)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			if err != nil {
				t.Fatalf("%s: Lock = %v", round, err)
			}
			if first, err := firstContender(obs, lock); err != nil || first != w.Node() {
				t.Fatalf("%s: the waiter holds %s, the server's first is %s (%v)", round, w.Node(), first, err)
			}
			if err := w.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if wc.Session() != sess {
			t.Errorf("%s: the session changed: the case was a session loss, not a lost answer", round)
		}
		waitNodes(t, obs, lock, 0, 15*time.Second, fmt.Sprintf("%s: no node left", round))
	}
}

// TestCloseWhileManyParked: twelve waiters of one client are parked behind
// a holder of another (each hooked on the shared watches of its P and
// PP, its own node's watch among them). The waiters' client is closed:
// every Lock must return, with an error that says the client closed, and
// hold nothing; their nodes go with the session; no goroutine is left
// (the package's TestMain checks with goleak).
func TestCloseWhileManyParked(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	hc := open(t, ens.Servers())
	wc, err := connection.Open(ctxFor(t, 15*time.Second), ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 2*time.Minute)
	h := newLock(t, hc, lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 12
	errc := make(chan error, waiters)
	ms := make([]*testLock, waiters)
	for i := range waiters {
		ms[i] = newLock(t, wc, lock)
		go func() { errc <- ms[i].Lock(ctx) }()
	}
	waitNodes(t, obs, lock, waiters+1, 20*time.Second, "the waiters' nodes")
	time.Sleep(300 * time.Millisecond) // parked
	closedAt := time.Now()
	if err := wc.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range waiters {
		select {
		case err := <-errc:
			if err == nil {
				t.Errorf("a Lock returned nil after its client closed")
			} else if !errors.Is(err, connection.ErrClosed) {
				t.Errorf("Lock = %v, want an error wrapping connection.ErrClosed", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d Locks still waiting 20 s after their client closed", waiters-i, waiters)
		}
	}
	t.Logf("all %d Locks returned %v after Close", waiters, time.Since(closedAt).Round(time.Millisecond))
	for i, m := range ms {
		if m.Held() {
			t.Errorf("waiter %d holds after its client closed", i)
		}
	}
	waitNodes(t, obs, lock, 1, 20*time.Second, "only the holder's node")
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestManyParkedWaitersRequeueAfterExpiry: ten waiters of one client are
// parked behind a holder of another, hooked on each other's shared
// watches. The client is silenced until the server expires its session:
// every parked waiter wakes with the session's end, and queues again in
// the next session. Then the holder releases. Each waiter must hold in
// turn, alone in the process and first on the server, with a node of the
// new session; none may hang.
func TestManyParkedWaitersRequeueAfterExpiry(t *testing.T) {
	t.Parallel()
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
	wc := open(t, p.Servers(), connection.WithSessionTimeout(3*time.Second))
	h := newLock(t, hc, lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	old := wc.Session()
	const waiters = 10
	var (
		holders atomic.Int32
		mu      sync.Mutex
		fails   []string
		wg      sync.WaitGroup
		done    atomic.Int32
	)
	for i := range waiters {
		m := newLock(t, wc, lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Lock(ctx); err != nil {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("waiter %d: Lock: %v", i, err))
				mu.Unlock()
				return
			}
			if n := holders.Add(1); n != 1 {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("waiter %d: %d holders in the process", i, n))
				mu.Unlock()
			}
			if first, err := firstContender(obs, lock); (err != nil || first != m.Node()) && !closed(m.Done()) {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("waiter %d: holds %s, the server's first is %s (%v)", i, m.Node(), first, err))
				mu.Unlock()
			}
			if s := wc.Session(); s == old {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("waiter %d: holds in the old session", i))
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
			holders.Add(-1)
			if err := m.Unlock(ctx); err != nil {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("waiter %d: Unlock: %v", i, err))
				mu.Unlock()
			}
			done.Add(1)
		}()
	}
	count := func(want int) func() error {
		return func() error {
			kids, _, err := obs.Children(lock)
			if err != nil {
				return err
			}
			if len(kids) != want {
				return fmt.Errorf("%d contenders, want %d", len(kids), want)
			}
			return nil
		}
	}
	zktest.Eventually(t, 20*time.Second, "the waiters' nodes", count(waiters+1))
	time.Sleep(300 * time.Millisecond) // parked
	p.Blackhole()
	zktest.Eventually(t, 30*time.Second, "the old session's nodes gone", count(1))
	p.Restore()
	zktest.Eventually(t, 30*time.Second, "the new session's nodes", count(waiters+1))
	time.Sleep(300 * time.Millisecond)
	if holders.Load() != 0 {
		t.Fatal("a waiter holds while the holder's node is first")
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		t.Fatalf("%d of %d waiters held within 60 s of the release", done.Load(), waiters)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range fails {
		t.Error(f)
	}
	waitNodes(t, obs, lock, 0, 10*time.Second, "no node left")
}
