package semaphore_test

// Leases beyond one: participants sharing a client keep the maximum, and
// an Acquire of several leases never returns one without its node. The
// contract every hold keeps is holdtest's (hold_test.go).

import (
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

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
