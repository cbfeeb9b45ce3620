package semaphore_test

// Tests of ownership and release (docs/locks.md, "Ownership and release")
// for the semaphore: a lease ends before its release is sent, an
// unanswered release is never taken as not done, and participants sharing
// a client keep the limit.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// leaseGone waits until the server shows no node at p.
func leaseGone(t *testing.T, obs *zk.Conn, p string) {
	t.Helper()
	zktest.Eventually(t, 5*time.Second, "lease node "+p+" is deleted", func() error {
		ok, _, err := obs.Exists(p)
		if err == nil && ok {
			err = errors.New("still there")
		}
		return err
	})
}

// TestReleaseWithShortDeadlineEndsTheLease: Release whose deadline (100
// ms) is shorter than the reply time (300 ms) sends the delete, which
// applies. When Release returns the lease is over: Done closed, Context
// cancelled, the error says the deadline and that the outcome is unknown,
// a second Release says ErrReleased, and the lease node goes, so that
// another client gets the one lease.
func TestReleaseWithShortDeadlineEndsTheLease(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	p := ens.Proxy(t)
	s := newSem(t, open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second)), path, 1)
	other := newSem(t, open(t, ens.Servers()), path, 1)
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	leases, err := s.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	l := leases[0]

	p.DelayReplies(300 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = l.Release(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Release with a deadline shorter than the reply = %v, want DeadlineExceeded", err)
	}
	testkit.WantOutcomeUnknown(t, err)
	if !closedCh(l.Done()) {
		t.Error("the lease's Done is open after Release returned")
	}
	if l.Context().Err() == nil {
		t.Error("the lease's Context is not cancelled after Release returned")
	}
	p.Restore()
	if err := l.Release(ctx); !errors.Is(err, semaphore.ErrReleased) {
		t.Errorf("a second Release = %v, want ErrReleased", err)
	}
	leaseGone(t, obs, l.Node())
	got, err := other.TryAcquire(ctx, 1)
	if err != nil {
		t.Fatalf("another client's TryAcquire after the release: %v", err)
	}
	if err := got[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMutexUnlockWithShortDeadlineEndsTheHold: the same for the
// semaphore's Mutex. After an Unlock that timed out waiting for its
// answer, the Mutex holds nothing: its Done is closed, a second Unlock
// says ErrNotLocked, and the next Lock takes a new lease.
func TestMutexUnlockWithShortDeadlineEndsTheHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	m, err := semaphore.NewMutex(newSem(t, c, path, 1))
	if err != nil {
		t.Fatal(err)
	}
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done, token := m.Done(), m.Token()
	held, err := semaphore.Leases(ctx, c, path)
	if err != nil || len(held) != 1 {
		t.Fatalf("leases: %v, %v", held, err)
	}

	p.DelayReplies(300 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = m.Unlock(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Unlock with a deadline shorter than the reply = %v, want DeadlineExceeded", err)
	}
	testkit.WantOutcomeUnknown(t, err)
	if !closedCh(done) {
		t.Error("the hold's Done is open after Unlock returned")
	}
	p.Restore()
	leaseGone(t, obs, held[0].Path)
	if err := m.Unlock(ctx); !errors.Is(err, semaphore.ErrNotLocked) {
		t.Errorf("a second Unlock = %v, want ErrNotLocked", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Errorf("Lock after the unanswered Unlock = %v, want a new lease", err)
	} else {
		if m.Token() == token {
			t.Errorf("Lock kept the released lease (token %d)", token)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Error(err)
		}
	}
}

// TestLeaseEndsBeforeTheNextAcquire: a lease's Done closes before its
// delete leaves the client, so an acquirer woken by the delete never
// holds the one lease while the released lease's Done is open — with no
// fault, and with the releasing client's answers delayed 1.5 s (its
// session stays trusted).
func TestLeaseEndsBeforeTheNextAcquire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		n     int
		delay time.Duration
	}{
		{"no faults", 50, 0},
		{"releaser's answers delayed 1.5s", 3, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			path := ens.Root(t) + "/sem"
			obs := ens.Conn(t)
			ctx := ctxFor(t, 2*time.Minute)
			var sems [2]*semaphore.Semaphore
			var ps [2]*zktest.Proxy
			for i := range sems {
				ps[i] = ens.Proxy(t)
				sems[i] = newSem(t, open(t, ps[i].Servers(), connection.WithSessionTimeout(10*time.Second)), path, 1)
			}
			got, err := sems[0].Acquire(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			lease, holder, bad := got[0], 0, 0
			type result struct {
				lease      *semaphore.Lease
				err        error
				doneClosed bool
			}
			for i := range tc.n {
				waiter := 1 - holder
				prevDone := lease.Done()
				if closedCh(prevDone) {
					t.Fatalf("handover %d: the lease ended before its Release; the check would prove nothing", i)
				}
				res := make(chan result, 1)
				go func() {
					got, err := sems[waiter].Acquire(ctx, 1)
					r := result{err: err, doneClosed: closedCh(prevDone)} // at the instant Acquire returned
					if err == nil {
						r.lease = got[0]
					}
					res <- r
				}()
				// The waiter's lease node is made and waits behind the held one.
				zktest.Eventually(t, 10*time.Second, "the waiter's lease node", func() error {
					if n := leaseNodes(t, obs, path); n != 2 {
						return fmt.Errorf("%d lease nodes", n)
					}
					return nil
				})
				if tc.delay > 0 {
					ps[holder].DelayReplies(tc.delay)
				}
				rerr := lease.Release(ctx)
				ps[holder].Restore()
				r := <-res
				if rerr != nil || r.err != nil {
					t.Fatalf("handover %d: Release = %v, Acquire = %v", i, rerr, r.err)
				}
				if !r.doneClosed {
					bad++
				}
				lease, holder = r.lease, waiter
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if bad > 0 {
				t.Errorf("in %d of %d handovers the next Acquire returned while the released lease's Done was open", bad, tc.n)
			}
		})
	}
}

// TestLeaseHoldersOfOneClientStayWithinTheMaximum: eight acquirers on one
// shared client take leases of a semaphore of two, 200 times in all.
// Whenever an Acquire returns, fewer than two other leases may have their
// Done open.
func TestLeaseHoldersOfOneClientStayWithinTheMaximum(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	s := newSem(t, open(t, ens.Servers()), path, 2)
	ctx := ctxFor(t, 2*time.Minute)
	const participants, rounds, maxLeases = 8, 25, 2
	var (
		mu       sync.Mutex
		holding  = map[int]<-chan struct{}{} // acquirer -> Done of its lease, until its Release returned
		overlaps []string
		errs     []error
	)
	var wg sync.WaitGroup
	for i := range participants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				got, err := s.Acquire(ctx, 1)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("acquirer %d round %d: %w", i, r, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				open := 0
				for _, done := range holding {
					if !closedCh(done) {
						open++
					}
				}
				if open >= maxLeases {
					overlaps = append(overlaps, fmt.Sprintf("acquirer %d got a lease while %d others had Done open", i, open))
				}
				holding[i] = got[0].Done()
				mu.Unlock()
				err = got[0].Release(ctx)
				mu.Lock()
				delete(holding, i)
				if err != nil {
					errs = append(errs, fmt.Errorf("acquirer %d round %d: Release: %w", i, r, err))
				}
				mu.Unlock()
				if err != nil {
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
		t.Errorf("%d of %d leases exceeded the maximum of %d open leases, e.g. %v",
			len(overlaps), participants*rounds, maxLeases, overlaps[:min(len(overlaps), 3)])
	}
}

// TestAcquireNeverReturnsALeaseWithoutItsNode: a lease whose own node is
// gone has ended, and Acquire never returns one. Acquire(2) makes its first
// lease node and waits for the second (the maximum is reached); meanwhile
// someone writes to the first lease's node (a revocation, __REVOKE__, as
// Curator's Revoker does to any participant's node) and then deletes it.
// The first lease's own-node watch fired for the data change, which is no
// proof that the node is there: when the second lease comes, Acquire must
// not return two leases, one of whose nodes is not on the server.
func TestAcquireNeverReturnsALeaseWithoutItsNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	sp := ens.Root(t) + "/sem"
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	other := newSem(t, open(t, ens.Servers()), sp, 2)
	s := newSem(t, open(t, ens.Servers()), sp, 2)

	held, err := other.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
		ls  []string
	}
	res := make(chan result, 1)
	go func() {
		leases, err := s.Acquire(ctx, 2)
		var nodes []string
		for _, l := range leases {
			nodes = append(nodes, l.Node())
		}
		res <- result{len(leases), err, nodes}
	}()
	// Acquire made its first lease node and waits for the second.
	var first string
	zktest.Eventually(t, 10*time.Second, "the acquire's two lease nodes", func() error {
		kids, _, err := obs.Children(sp + "/leases")
		if err != nil {
			return err
		}
		if len(kids) < 3 {
			return errNotYet
		}
		for _, k := range kids {
			p := path.Join(sp, "leases", k)
			if p != held[0].Node() && (first == "" || seq(p) < seq(first)) {
				first = p
			}
		}
		return nil
	})
	// The first lease's node: revoked, then deleted.
	if _, err := obs.Set(first, []byte("__REVOKE__"), -1); err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(first, -1); err != nil {
		t.Fatal(err)
	}
	// The other lease goes: there is room for the second lease.
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil {
		t.Logf("Acquire = %v (right: a lease was lost)", r.err)
		return
	}
	for _, n := range r.ls {
		ok, _, err := obs.Exists(n)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("Acquire returned nil with a lease whose node %s is not on the server", n)
		}
	}
}

var errNotYet = zk.ErrNoNode

// seq is a node name's sequence suffix.
func seq(p string) string { return p[len(p)-10:] }
