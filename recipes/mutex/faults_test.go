package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// faultShape is one way a holder can be cut off from the ensemble.
type faultShape struct {
	name string
	// start begins the fault on the holder's proxy; the holder's client
	// hc is given for shapes that prepare watches first. It returns a stop
	// function for anything it started.
	start func(t *testing.T, p *zktest.Proxy, hc *connection.Client, ens *zktest.Ensemble, root string) (stop func())
}

var faultShapes = []faultShape{
	{"blackhole", func(t *testing.T, p *zktest.Proxy, _ *connection.Client, _ *zktest.Ensemble, _ string) func() {
		p.Blackhole()
		return func() {}
	}},
	// The server hears every ping, so it never expires the session; the
	// client hears nothing in time and must give the session up itself
	// (closing it, which the server does hear).
	{"replies delayed past the timeout", func(t *testing.T, p *zktest.Proxy, _ *connection.Client, _ *zktest.Ensemble, _ string) func() {
		p.DelayReplies(3 * time.Second)
		return func() {}
	}},
	{"requests dropped", func(t *testing.T, p *zktest.Proxy, _ *connection.Client, _ *zktest.Ensemble, _ string) func() {
		p.DropRequests()
		return func() {}
	}},
	// Requests are dropped while watch notifications keep arriving: the
	// connection never goes quiet, so go-zookeeper never reports a
	// disconnect; only the client's own watchdog can tell.
	{"watch events stream during the cut", func(t *testing.T, p *zktest.Proxy, hc *connection.Client, ens *zktest.Ensemble, root string) func() {
		ctx := ctxFor(t, time.Minute)
		w := ens.Conn(t)
		const n = 100
		for i := range n {
			node := fmt.Sprintf("%s/stream-%d", root, i)
			if _, err := w.Create(node, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := hc.GetWatch(ctx, node); err != nil {
				t.Fatal(err)
			}
		}
		p.DropRequests()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(30 * time.Millisecond)
			defer tick.Stop()
			for i := 0; i < n; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
					_, _ = w.Set(fmt.Sprintf("%s/stream-%d", root, i), []byte("x"), -1)
				}
			}
		}()
		return func() { close(stop); <-done }
	}},
}

// TestHolderCutOffLearnsBeforeAnotherAcquires: for every shape of fault,
// under either error policy, the holder's Done must be closed at the
// instant another participant's Lock returns — checked against the
// server's view (the other participant holds only once the server has
// dropped the holder's node), not against a time bound.
func TestHolderCutOffLearnsBeforeAnotherAcquires(t *testing.T) {
	for _, shape := range faultShapes {
		for _, policy := range []connection.ErrorPolicy{connection.StandardPolicy, connection.SessionPolicy} {
			t.Run(shape.name+"/"+policy.String(), func(t *testing.T) {
				t.Parallel()
				ens := shared.Ensemble(t)
				root := ens.Root(t)
				checkHolderLearnsFirst(t, ens, root, policy, shape)
			})
		}
	}
}

func checkHolderLearnsFirst(t *testing.T, ens *zktest.Ensemble, root string, policy connection.ErrorPolicy, shape faultShape) {
	lock := root + "/lock"
	p := ens.Proxy(t)
	hc := open(t, p.Servers(), connection.WithSessionTimeout(time.Second), connection.WithErrorPolicy(policy))
	holder := newMutex(t, hc, lock)
	waiter := newMutex(t, open(t, ens.Servers()), lock)
	ctx := ctxFor(t, time.Minute)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hctx := holder.Context()
	node := holder.Node()

	var doneAt atomic.Int64
	go func() {
		<-holder.Done()
		doneAt.Store(time.Now().UnixNano())
	}()
	type acquisition struct {
		err        error
		holderDone bool
		at         time.Time
	}
	acquired := make(chan acquisition, 1)
	go func() {
		err := waiter.Lock(ctx)
		acquired <- acquisition{err: err, holderDone: closed(holder.Done()), at: time.Now()}
	}()

	cut := time.Now()
	stop := shape.start(t, p, hc, ens, root)
	got := <-acquired
	stop()
	if got.err != nil {
		t.Fatal(got.err)
	}
	if !got.holderDone {
		t.Fatalf("another participant acquired %v after the fault began while the holder's Done was still open",
			got.at.Sub(cut))
	}
	if d := doneAt.Load(); d != 0 {
		t.Logf("holder's Done %v after the fault began; the waiter acquired %v after it",
			time.Duration(d-cut.UnixNano()).Round(time.Millisecond), got.at.Sub(cut).Round(time.Millisecond))
	}
	// One cause, the first: the suspension under the standard policy,
	// the session's loss under the session policy.
	want, other := connection.ErrSuspended, connection.ErrSessionLost
	if policy == connection.SessionPolicy {
		want, other = other, want
	}
	if cause := context.Cause(hctx); !errors.Is(cause, mutex.ErrLockLost) || !errors.Is(cause, want) || errors.Is(cause, other) {
		t.Fatalf("holder's context cause = %v, want ErrLockLost and %v, not %v", cause, want, other)
	}
	// The server's view: the holder's node is gone.
	if ok, _, err := ens.Conn(t).Exists(node); err != nil || ok {
		t.Fatalf("holder's node %s: exists=%v err=%v", node, ok, err)
	}
	// Unlock reports the loss and frees the Mutex.
	if err := holder.Unlock(ctx); !errors.Is(err, mutex.ErrLockLost) || !errors.Is(err, want) {
		t.Fatalf("Unlock after the loss = %v, want ErrLockLost and %v", err, want)
	}
	if holder.Held() {
		t.Fatal("the Mutex still holds after reporting the loss")
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	p.Restore()
	// The Mutex can be used again, in the next session.
	if err := holder.Lock(ctx); err != nil {
		t.Fatalf("Lock after a lost hold: %v", err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHolderOnPausedServerLearnsFirst: the server the holder is connected
// to stops (SIGSTOP) — the holder hears nothing, the rest of the ensemble
// goes on and expires its session.
func TestHolderOnPausedServerLearnsFirst(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	root := "/paused"
	servers := ens.Servers()
	for _, policy := range []connection.ErrorPolicy{connection.StandardPolicy, connection.SessionPolicy} {
		t.Run(policy.String(), func(t *testing.T) {
			// The holder talks to a follower only, the waiter to the others.
			leader := ens.MustLeader(t)
			follower := (leader + 1) % 3
			hc := open(t, servers[follower:follower+1], connection.WithSessionTimeout(time.Second), connection.WithErrorPolicy(policy))
			var rest []string
			for i, s := range servers {
				if i != follower {
					rest = append(rest, s)
				}
			}
			lock := root + "/" + policy.String()
			holder := newMutex(t, hc, lock)
			waiter := newMutex(t, open(t, rest), lock)
			ctx := ctxFor(t, time.Minute)
			if err := holder.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			acquired := make(chan bool, 1)
			go func() {
				err := waiter.Lock(ctx)
				if err != nil {
					t.Error(err)
				}
				acquired <- closed(holder.Done())
			}()
			if err := ens.Pause(follower); err != nil {
				t.Fatal(err)
			}
			holderDone := <-acquired
			if err := ens.Resume(follower); err != nil {
				t.Fatal(err)
			}
			if !holderDone {
				t.Fatal("another participant acquired while the holder's Done was still open")
			}
			if err := holder.Unlock(ctx); !errors.Is(err, mutex.ErrLockLost) {
				t.Fatalf("Unlock after the loss = %v, want ErrLockLost", err)
			}
			if err := waiter.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLostCreateReplyLeavesNoOrphan: the create reaches the server, its
// answer does not reach the client. The retry must find the node by its
// GUID instead of making a second one.
func TestLostCreateReplyLeavesNoOrphan(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/lock"
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second))
	m := newMutex(t, c, lock)
	observer := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := c.EnsurePath(ctx, lock); err != nil {
		t.Fatal(err)
	}

	p.DropReplies()
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	zktest.Eventually(t, 10*time.Second, "the create lands", func() error {
		kids, _, err := observer.Children(lock)
		if err == nil && len(kids) == 0 {
			err = errors.New("no node yet")
		}
		return err
	})
	p.Restore()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	kids, _, err := observer.Children(lock)
	if err != nil || len(kids) != 1 || lock+"/"+kids[0] != m.Node() {
		t.Fatalf("children %v, holder %s: %v; want exactly the holder's node", kids, m.Node(), err)
	}
	_, st, err := observer.Get(m.Node())
	if err != nil || st.EphemeralOwner != c.Session().ID() {
		t.Fatalf("node owner %#x, session %#x: %v", st.EphemeralOwner, c.Session().ID(), err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHerd: a release wakes at most two waiters, counted as the watch
// notifications the server sent to the waiters' sessions while they
// waited. A holder also hears its own node's deletion when it releases
// (the watch that ends a hold whose node someone else deletes): one more
// notification per release, to the releaser, which wakes nobody.
func TestHerd(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/lock"
	const waiters = 50
	ctx := ctxFor(t, time.Minute)
	holder := newMutex(t, open(t, ens.Servers()), lock)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	clients := make([]*connection.Client, waiters)
	atLock := make([]int64, waiters) // notifications when Lock returned
	order := make(chan int, waiters)
	errs := make(chan error, waiters)
	for i := range waiters {
		clients[i] = open(t, ens.Servers())
		m := newMutex(t, clients[i], lock)
		go func() {
			if err := m.Lock(ctx); err != nil {
				errs <- err
				return
			}
			atLock[i] = clients[i].Stats().Notifications
			order <- i
			errs <- m.Unlock(ctx)
		}()
	}
	zktest.Eventually(t, 20*time.Second, "all waiters queued", func() error {
		ps, err := holder.Participants(ctx)
		if err == nil && len(ps) != waiters+1 {
			err = fmt.Errorf("%d participants", len(ps))
		}
		return err
	})
	before := make([]int64, waiters)
	for i, c := range clients {
		before[i] = c.Stats().Notifications
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var total, all int64
	for i, c := range clients {
		n := atLock[i] - before[i]
		total += n
		if n > 2 {
			t.Errorf("waiter %d was woken %d times while it waited, want at most 2", i, n)
		}
		own := c.Stats().Notifications - atLock[i]
		all += n + own
		if own > 1 {
			t.Errorf("waiter %d heard %d notifications after it held, want at most 1 (its own node's deletion)", i, own)
		}
	}
	releases := int64(waiters + 1)
	t.Logf("%d releases woke waiters %d times: %.2f per release (%d notifications in all)", releases, total, float64(total)/float64(releases), all)
	if total > 2*releases {
		t.Fatalf("%d wake-ups for %d releases, want at most 2 per release", total, releases)
	}
}

// TestMutualExclusionThroughLeaderFailover: 10 participants with their
// own sessions take the lock 200 times each on a 3-node ensemble whose
// leader is restarted mid-run. Each hold lasts a millisecond, long enough
// for an overlap to be seen. No participant acquires while another's hold
// still has its Done open, no Lock returns a hold whose Done is already
// closed, Unlock never says "not locked", and fencing tokens strictly
// increase from hold to hold.
func TestMutualExclusionThroughLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	const participants, cycles = 10, 200
	ctx := ctxFor(t, 5*time.Minute)

	var (
		mu         sync.Mutex
		inside     = map[int]<-chan struct{}{}
		overlaps   int
		lostOnLock int
		lastToken  int64
		badTokens  []string
		holds      atomic.Int32
	)
	failover := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, participants)
	for p := range participants {
		c := open(t, ens.Servers(), connection.WithSessionTimeout(10*time.Second))
		m := newMutex(t, c, "/exclusion")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < cycles; {
				if err := m.Lock(ctx); err != nil {
					if ctx.Err() != nil {
						errs <- fmt.Errorf("participant %d: %w", p, err)
						return
					}
					continue // a fault surfaced; try again
				}
				done := m.Done()
				mu.Lock()
				if closed(done) {
					lostOnLock++
				}
				for _, other := range inside {
					if !closed(other) {
						overlaps++
					}
				}
				inside[p] = done
				if tok := m.Token(); tok <= lastToken {
					badTokens = append(badTokens, fmt.Sprintf("%d after %d", tok, lastToken))
				} else {
					lastToken = tok
				}
				mu.Unlock()
				if holds.Add(1) == participants*cycles/2 {
					close(failover)
				}
				time.Sleep(time.Millisecond)
				mu.Lock()
				delete(inside, p)
				mu.Unlock()
				for {
					err := m.Unlock(ctx)
					if err == nil || errors.Is(err, mutex.ErrLockLost) {
						break
					}
					if errors.Is(err, mutex.ErrNotLocked) || ctx.Err() != nil {
						errs <- fmt.Errorf("participant %d: Unlock: %w", p, err)
						return
					}
				}
				i++
			}
		}()
	}
	<-failover
	leader := ens.MustLeader(t)
	if err := ens.Stop(leader); err != nil {
		t.Fatal(err)
	}
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if overlaps != 0 || lostOnLock != 0 {
		t.Fatalf("%d acquisitions while another hold's Done was open, %d Lock calls returned a lost hold", overlaps, lostOnLock)
	}
	if len(badTokens) > 0 {
		t.Fatalf("fencing tokens went backwards: %s", strings.Join(badTokens, "; "))
	}
	t.Logf("%d holds, leader %d restarted mid-run, no overlap, tokens strictly increasing", holds.Load(), leader)
}
