package lockcore_test

// Tests of a waiter's watches set in one setWatches right after its
// listing (Lock.watch): the shape on the wire, and that a waiter neither
// misses a release nor holds beside another, with faults, many
// participants on one client, and an operator deleting nodes.

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

const (
	opExists     = 3
	opSetWatches = 101
	opPing       = 11
)

// logRequests logs the opcodes of the requests, pings aside, that proxy p
// passes to the server, in order, until zkserver.LogWire(p, nil); the
// function it returns gives a copy of those logged so far.
func logRequests(p *zkserver.Proxy) func() []int32 {
	var (
		mu  sync.Mutex
		ops []int32
	)
	zkserver.LogWire(p, func(ev zkserver.WireEvent) {
		if ev.ToServer && ev.Op != opPing {
			mu.Lock()
			ops = append(ops, ev.Op)
			mu.Unlock()
		}
	})
	return func() []int32 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ops)
	}
}

// TestWaiterSetsItsWatchesInOneRequest: two waiters of one client queue
// behind a holder of another. Each sends its create, its listing and one
// setWatches (its own node's watch, its predecessor's and, for the
// second, its predecessor's predecessor's) — no read of a node — and
// each takes the lock, in turn, without another request: the whole
// exchange of the waiters' client is two creates, two listings, two
// setWatches and the two releases.
func TestWaiterSetsItsWatchesInOneRequest(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	obs := ens.Conn(t)
	lock := ens.Root(t) + "/lock"
	if _, err := obs.Create(lock, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p := countingProxy(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	h := newLock(t, open(t, ens.Servers()), lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wc := open(t, p.Servers())
	w1, w2 := newLock(t, wc, lock), newLock(t, wc, lock)
	var (
		mu  sync.Mutex
		ops = map[int32]int{}
	)
	zkserver.LogWire(p, func(ev zkserver.WireEvent) {
		if ev.ToServer && ev.Op != opPing {
			mu.Lock()
			ops[ev.Op]++
			mu.Unlock()
		}
	})
	queued := func(n int) { waitNodes(t, obs, lock, n, 10*time.Second, fmt.Sprintf("%d queued", n)) }
	errs := make(chan error, 2)
	go func() { errs <- w1.Lock(ctx) }()
	queued(2)
	go func() { errs <- w2.Lock(ctx) }()
	queued(3)
	// Both have set their watches once the server counts them: the
	// holder's node is watched by both, w1's by itself and w2, w2's by
	// itself.
	zktest.Eventually(t, 10*time.Second, "the waiters' watches", func() error {
		mu.Lock()
		defer mu.Unlock()
		if ops[opSetWatches] < 2 {
			return fmt.Errorf("%d setWatches", ops[opSetWatches])
		}
		return nil
	})
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if !w1.Held() || w2.Held() {
		t.Fatalf("after the holder's release: w1 held %v, w2 held %v", w1.Held(), w2.Held())
	}
	if err := w1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := w2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	zkserver.LogWire(p, nil)
	mu.Lock()
	defer mu.Unlock()
	want := map[int32]int{opCreate2: 2, opGetChildren: 2, opSetWatches: 2, opDelete: 2}
	for op, n := range ops {
		if want[op] != n {
			t.Errorf("the waiters' client sent %d requests of opcode %d, want %d (all: %v)", n, op, want[op], ops)
		}
	}
	for op, n := range want {
		if ops[op] != n {
			t.Errorf("the waiters' client sent %d requests of opcode %d, want %d (all: %v)", ops[op], op, n, ops)
		}
	}
}

// TestContendedHandoffsUnderFaults tries to make a waiter whose watches
// were set in one setWatches miss a release or hold beside another.
// Ten participants on three clients — five on one, three on another, two
// on a third — take and release one lock in a loop, while the first two
// clients' connections are cut, blackholed, have their answers dropped
// (the requests apply, the answers are lost: a setWatches among them) or
// delayed, at random, for ten seconds; their sessions outlive every fault.
// No participant may lock while another's Done is open, and once the
// faults end every participant must go on taking the lock: a waiter that
// missed the deletion of the node it waits on would wait for ever, and
// every participant behind it with it.
func TestContendedHandoffsUnderFaults(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	pa, pb := ens.Proxy(t), ens.Proxy(t)
	clients := []*connection.Client{
		open(t, pa.Servers(), connection.WithSessionTimeout(8*time.Second)),
		open(t, pb.Servers(), connection.WithSessionTimeout(8*time.Second)),
		open(t, ens.Servers()),
	}
	counts := []int{5, 3, 2}
	log := &holdLog{holding: map[*testLock]<-chan struct{}{}}
	ch := newChurn(t, ctxFor(t, 3*time.Minute), 10)
	ch.lenient, ch.unlockOK = true, lostOrUnknown
	k := 0
	for ci, c := range clients {
		for range counts[ci] {
			i := k
			k++
			m := newLock(t, c, lock)
			ch.run(i, m, func() error {
				log.locked(m, fmt.Sprint("participant ", i))
				log.unlocking(m)
				return nil
			})
		}
	}
	proxies := []*zktest.Proxy{pa, pb}
	faults := 0
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		p := proxies[rng.IntN(2)]
		switch rng.IntN(4) {
		case 0:
			p.Cut()
		case 1:
			p.Blackhole()
		case 2:
			p.DropReplies()
		case 3:
			p.Delay(time.Duration(1+rng.IntN(5)) * time.Millisecond)
		}
		faults++
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		p.Restore()
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
	}
	ch.settle("faults")
	ch.finish()
	t.Logf("%d faults, %d locks, %d Lock calls failed during the faults", faults, log.locks, ch.lockErrs.Load())
	log.overlapped(t)
}

// TestOperatorDeletionsUnderContention: eight participants of one client
// take and release one lock in a loop while an operator deletes a random
// contender's node — a waiter's or the holder's — every few tens of
// milliseconds, for five seconds. A hold whose node is gone must end
// (its Done closes) within seconds; a waiter whose predecessor's node was
// deleted, by a release or by the operator, must not be left waiting:
// once the operator stops, every participant goes on taking the lock.
func TestOperatorDeletionsUnderContention(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	c := open(t, ens.Servers())
	const n = 8
	var deleted, lost atomic.Int32
	ch := newChurn(t, ctxFor(t, 3*time.Minute), n)
	for i := range n {
		m := newLock(t, c, lock)
		ch.run(i, m, func() error {
			node := m.Node()
			ok, _, err := obs.Exists(node)
			if err != nil {
				return err
			}
			if !ok {
				// Deleted by the operator: the hold must end.
				select {
				case <-m.Done():
					lost.Add(1)
				case <-time.After(5 * time.Second):
					return fmt.Errorf("participant %d: the hold of %s, whose node is gone, is still on after 5 s", i, node)
				}
			}
			return nil
		})
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		kids, _, err := obs.Children(lock)
		if err == nil && len(kids) > 0 {
			if err := obs.Delete(path.Join(lock, kids[rng.IntN(len(kids))]), -1); err == nil {
				deleted.Add(1)
			}
		}
		time.Sleep(time.Duration(10+rng.IntN(60)) * time.Millisecond)
	}
	ch.settle("deletions")
	ch.finish()
	t.Logf("%d nodes deleted by the operator, %d holds found their node gone (each ended)", deleted.Load(), lost.Load())
	if deleted.Load() == 0 {
		t.Error("the operator deleted nothing")
	}
}

// TestNodesGoneBetweenListingAndWatches: a waiter's own node and its
// predecessor (the holder's) are deleted by an operator, in that order,
// after the waiter's listing and before its setWatches — the waiter's
// answers are held back by the proxy, so its setWatches goes late. The
// setWatches fires both watches at once; the waiter must not take its
// predecessor's deletion for its turn: it starts again with a new node,
// which then holds. The wire shows the case was met: a setWatches sent
// between the first create and the second.
func TestNodesGoneBetweenListingAndWatches(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs, hc, wc, p := waiterBehindProxy(t, ens, 10*time.Second)
	ctx := ctxFor(t, 2*time.Minute)
	met := 0
	for round := range 6 {
		lock := path.Join(root, fmt.Sprint("lock", round))
		h, w := heldInKeptDir(t, ctx, obs, hc, wc, lock)
		hnode := h.Node()
		ops := logRequests(p)
		p.DelayReplies(300 * time.Millisecond)
		errc := make(chan error, 1)
		go func() { errc <- w.Lock(ctx) }()
		wnode := otherNode(t, obs, lock, 10*time.Second, "the waiter's node", hnode, path.Join(lock, "keep"))
		time.Sleep(50 * time.Millisecond) // the listing, right behind the create, has been read
		if _, err := obs.Multi(
			&zk.DeleteRequest{Path: wnode, Version: -1},
			&zk.DeleteRequest{Path: hnode, Version: -1},
		); err != nil {
			t.Fatal(err)
		}
		p.DelayReplies(0)
		if err := <-errc; err != nil {
			t.Fatalf("round %d: waiter's Lock: %v", round, err)
		}
		zkserver.LogWire(p, nil)
		if w.Node() == wnode {
			t.Fatalf("round %d: the waiter holds with %s, deleted before it held", round, wnode)
		}
		ok, _, err := obs.Exists(w.Node())
		if err != nil || !ok {
			t.Fatalf("round %d: the waiter holds %s, which the server does not have (%v)", round, w.Node(), err)
		}
		select {
		case <-h.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the holder's node is gone and its Done is open", round)
		}
		creates, watchesBetween := 0, false
		for _, op := range ops() {
			switch {
			case op == opCreate2:
				creates++
			case op == opSetWatches && creates == 1:
				watchesBetween = true
			}
		}
		if watchesBetween {
			met++
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		_ = h.Unlock(ctx)
	}
	t.Logf("%d of 6 rounds set the watches of deleted nodes", met)
	if met == 0 {
		t.Error("no round sent a setWatches for the deleted nodes: the case was not tried")
	}
}
