package lockcore_test

// Lock nodes whose data an operator writes: a waiter's watches set in one
// setWatches at its listing's zxid fire NodeDataChanged for a node
// written since (Lock.watch). Such an
// event is no release: the waiter must neither hold while the node it
// waits on is there nor stop waiting on it, nor loop on requests.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// firstContender returns the node of dir that the server says holds: the
// first mutex contender in queue order.
func firstContender(conn *zk.Conn, dir string) (string, error) {
	kids, _, err := conn.Children(dir)
	if err != nil {
		return "", err
	}
	cs := layout.Sort(kids, layout.MutexKinds)
	if len(cs) == 0 {
		return "", errors.New("no contender")
	}
	return path.Join(dir, cs[0].Name), nil
}

// TestPredecessorsWrittenBeforeWatchesAreNoRelease: a holder H and a
// waiter W1 of one client, and a waiter W2 of another client whose
// answers a proxy holds back. After W2's create and listing, and before
// its setWatches is handled, an operator writes the data of H's node (W2's
// PP), W1's (its P) and W2's own. The setWatches then fires all three
// watches at once with NodeDataChanged. W2 must not hold while H's node is
// first (the server's view), must not fall into a loop of requests, and
// must hold in its turn, after H and W1 have unlocked, with its first node.
func TestPredecessorsWrittenBeforeWatchesAreNoRelease(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs, hc, wc, p := waiterBehindProxy(t, ens, 10*time.Second)
	ctx := ctxFor(t, 2*time.Minute)
	met := 0
	for round := range 4 {
		lock := path.Join(root, fmt.Sprint("lock", round))
		h, w1, w2 := newLock(t, hc, lock), newLock(t, hc, lock), newLock(t, wc, lock)
		if err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		e1 := make(chan error, 1)
		go func() { e1 <- w1.Lock(ctx) }()
		var w1node string
		zktest.Eventually(t, 10*time.Second, "w1 queued", func() error {
			kids, _, err := obs.Children(lock)
			if err != nil {
				return err
			}
			for _, k := range kids {
				if n := path.Join(lock, k); n != h.Node() {
					w1node = n
					return nil
				}
			}
			return errors.New("not yet")
		})
		ops := logRequests(p)
		p.DelayReplies(300 * time.Millisecond)
		e2 := make(chan error, 1)
		go func() { e2 <- w2.Lock(ctx) }()
		var w2node string
		zktest.Eventually(t, 10*time.Second, "w2 queued", func() error {
			kids, _, err := obs.Children(lock)
			if err != nil {
				return err
			}
			for _, k := range kids {
				if n := path.Join(lock, k); n != h.Node() && n != w1node {
					w2node = n
					return nil
				}
			}
			return errors.New("not yet")
		})
		time.Sleep(50 * time.Millisecond) // the listing, right behind the create, has been handled
		for _, n := range []string{h.Node(), w1node, w2node} {
			if _, err := obs.Set(n, []byte("written by an operator"), -1); err != nil {
				t.Fatal(err)
			}
		}
		p.DelayReplies(0)
		// Give W2 time to see the events and to act on them.
		time.Sleep(time.Second)
		seen := ops()
		if first, err := firstContender(obs, lock); err != nil || first != h.Node() {
			t.Fatalf("round %d: the server's first contender is %s (%v), want the holder's %s", round, first, err, h.Node())
		}
		if w2.Held() || w1.Held() {
			t.Fatalf("round %d: a waiter holds while the holder's node is first: w1 %v, w2 %v", round, w1.Held(), w2.Held())
		}
		creates, watchesAfter := 0, 0
		for _, op := range seen {
			switch {
			case op == opCreate2:
				creates++
			case op == opSetWatches:
				watchesAfter++
			}
		}
		if creates != 1 {
			t.Fatalf("round %d: w2 created %d nodes, want 1 (ops %v)", round, creates, seen)
		}
		if len(seen) > 8 {
			t.Errorf("round %d: w2 sent %d requests while waiting, a loop? %v", round, len(seen), seen)
		}
		if watchesAfter > 0 {
			met++
		}
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-e1; err != nil {
			t.Fatalf("round %d: w1: %v", round, err)
		}
		if w2.Held() {
			t.Fatalf("round %d: w2 holds beside w1", round)
		}
		if err := w1.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-e2; err != nil {
			t.Fatalf("round %d: w2: %v", round, err)
		}
		zkserver.LogWire(p, nil)
		if w2.Node() != w2node {
			t.Errorf("round %d: w2 holds %s, not its first node %s (a write of its node made it start again)", round, w2.Node(), w2node)
		}
		if first, err := firstContender(obs, lock); err != nil || first != w2.Node() {
			t.Fatalf("round %d: w2 holds, the server's first contender is %s (%v)", round, first, err)
		}
		if err := w2.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: w2's requests while the holder held: %v", round, seen)
	}
	if met == 0 {
		t.Error("no round sent a setWatches: the case was not tried")
	}
}

// TestOperatorWritesUnderContention: eight participants on two clients
// (one behind a proxy that cuts, drops answers and delays at random) take
// and release one lock in a loop while an operator writes the data of a
// random contender's node every few milliseconds, for eight seconds. At
// every lock the server's first contender must be the new holder's node
// and no other participant's Done open; after the writes and faults end,
// every participant must go on taking the lock.
func TestOperatorWritesUnderContention(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	view := ens.Conn(t)
	px := ens.Proxy(t)
	clients := []*connection.Client{
		open(t, px.Servers(), connection.WithSessionTimeout(8*time.Second)),
		open(t, ens.Servers()),
	}
	const n = 8
	log := &holdLog{holding: map[*testLock]<-chan struct{}{}}
	var writes atomic.Int32
	ch := newChurn(t, ctxFor(t, 3*time.Minute), n)
	ch.lenient, ch.unlockOK = true, lostOrUnknown
	for i := range n {
		m := newLock(t, clients[i%2], lock)
		ch.run(i, m, func() error {
			log.locked(m, fmt.Sprint("participant ", i))
			if first, err := firstContender(view, lock); err == nil && first != m.Node() && !closed(m.Done()) {
				ch.fail(fmt.Errorf("participant %d holds %s, the server's first contender is %s", i, m.Node(), first))
			}
			log.unlocking(m)
			return nil
		})
	}
	ch.wg.Add(1)
	go func() {
		defer ch.wg.Done()
		wrng := rand.New(rand.NewPCG(seed, 4))
		for !ch.clean.Load() {
			kids, _, err := obs.Children(lock)
			if err == nil && len(kids) > 0 {
				if _, err := obs.Set(path.Join(lock, kids[wrng.IntN(len(kids))]), []byte("w"), -1); err == nil {
					writes.Add(1)
				}
			}
			time.Sleep(time.Duration(1+wrng.IntN(10)) * time.Millisecond)
		}
	}()
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		switch rng.IntN(3) {
		case 0:
			px.Cut()
		case 1:
			px.DropReplies()
		case 2:
			px.Delay(time.Duration(1+rng.IntN(5)) * time.Millisecond)
		}
		time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
		px.Restore()
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
	}
	ch.settle("writes")
	ch.finish()
	t.Logf("%d writes of contenders' nodes, %d locks", writes.Load(), log.locks)
	log.overlapped(t)
	if writes.Load() == 0 {
		t.Error("the operator wrote nothing")
	}
}
