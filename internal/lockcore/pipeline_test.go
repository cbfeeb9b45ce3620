package lockcore_test

// Tests of the first listing sent right behind the create, and of a hold
// handed out before its node's watch is answered (firstListing,
// Lock.await): the create and the listing cost one round trip, and a node
// deleted before its watch was set still ends the hold.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// Opcodes of the client protocol, as the counting proxy reports them.
const (
	opCreate2     = 15
	opGetChildren = 12
	opGetData     = 4
	opDelete      = 2
)

// TestFirstListingGoesBehindTheCreate: on the wire, an uncontended Lock
// sends the listing before the create is answered (the two cost one round
// trip, not two), and returns as soon as the listing is answered, without
// waiting for its own node's watch. A delay of 3 ms each way makes the
// order unmistakable on a loaded machine.
func TestFirstListingGoesBehindTheCreate(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	// A persistent directory, not the container the first Lock would
	// make: the server's container check would delete an empty container
	// between two cycles, and the next cycle would make it again (its
	// create refused, the directory made, the create alone again).
	if _, err := ens.Conn(t).Create(lock, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p := countingProxy(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)
	m := newLock(t, open(t, p.Servers()), lock)
	// The directory's first node holds without a listing: take it first.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	const d = 3 * time.Millisecond
	p.Delay(d)
	type event struct {
		zkserver.WireEvent
		returned bool // Lock returned here
	}
	var (
		mu     sync.Mutex
		events []event
	)
	zkserver.LogWire(p, func(ev zkserver.WireEvent) {
		mu.Lock()
		events = append(events, event{WireEvent: ev})
		mu.Unlock()
	})
	for range 3 {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		events = append(events, event{returned: true})
		mu.Unlock()
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	zkserver.LogWire(p, nil)
	mu.Lock()
	defer mu.Unlock()
	// Each cycle: -> create2, -> getChildren, then <- the create's answer;
	// Lock returns before the answer to its own node's getData.
	cycles := 0
	for i := 0; i < len(events); i++ {
		ev := events[i]
		if !ev.ToServer || ev.Op != opCreate2 {
			continue
		}
		cycles++
		create := ev.Xid
		var listed, answered, watchSent, watchAnswered, returned = -1, -1, -1, -1, -1
		var watchXid int32
		for j := i + 1; j < len(events); j++ {
			e := events[j]
			if e.ToServer && e.Op == opCreate2 {
				break // the next cycle
			}
			switch {
			case e.returned && returned < 0:
				returned = j
			case e.ToServer && e.Op == opGetChildren && listed < 0:
				listed = j
			case e.ToServer && e.Op == opGetData && watchSent < 0:
				watchSent, watchXid = j, e.Xid
			case !e.ToServer && !e.returned && e.Xid == create:
				answered = j
			case !e.ToServer && !e.returned && watchSent >= 0 && e.Xid == watchXid:
				watchAnswered = j
			}
		}
		if listed < 0 || answered < 0 || listed > answered {
			t.Errorf("cycle %d: the listing went at event %d, the create was answered at event %d: want the listing first", cycles, listed, answered)
		}
		// The watch is sent once the create is answered, and not at all
		// if the hold has ended by then (Unlock follows at once here).
		if returned < 0 || watchAnswered >= 0 && returned > watchAnswered {
			t.Errorf("cycle %d: Lock returned at event %d, its node's watch was answered at event %d: want Lock first", cycles, returned, watchAnswered)
		}
	}
	if cycles != 3 {
		t.Fatalf("%d creates seen on the wire, want 3: %+v", cycles, events)
	}
}

// TestNodeDeletedBeforeItsWatchEndsTheHold tries to break the hold handed
// out before its node's watch is answered: an operator deletes every node
// of the lock the moment it appears, from a session with no delay, while
// the lock's connection is delayed by 5 ms each way — so the deletion
// lands between the lock's listing (right behind its create) and its
// node's watch (sent once the create is answered). Every Lock that
// returns must see its hold end within seconds, lost because its node is
// gone; none may hold a node that is not there. At the end no node is
// left.
func TestNodeDeletedBeforeItsWatchEndsTheHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	if _, err := obs.Create(lock, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p := ens.Proxy(t)
	p.Delay(5 * time.Millisecond)
	m := newLock(t, open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second)), lock)

	stop := make(chan struct{})
	var deleter sync.WaitGroup
	deleter.Add(1)
	go func() { // the operator
		defer deleter.Done()
		for {
			kids, _, ch, err := obs.ChildrenW(lock)
			if err != nil {
				return
			}
			for _, k := range kids {
				_ = obs.Delete(lock+"/"+k, -1)
			}
			select {
			case <-ch:
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); _ = obs.Delete(lock+"/none", -1); deleter.Wait() }()

	held := 0
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := m.Lock(ctx)
		cancel()
		if err != nil {
			continue // the node went before the listing: Lock starts again, until its deadline
		}
		held++
		node := m.Node()
		select {
		case <-m.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("a hold of %s, deleted by the operator, is still on after 5 s", node)
		}
		if cause := context.Cause(m.Context()); !errors.Is(cause, errLockLost) {
			t.Errorf("the hold of %s ended with %v, want ErrLockLost", node, cause)
		}
		if err := m.Unlock(context.Background()); !errors.Is(err, errLockLost) && !errors.Is(err, errNotLocked) {
			t.Errorf("Unlock of a lost hold = %v", err)
		}
	}
	t.Logf("%d of 20 Locks returned a hold (each then lost)", held)
	if held == 0 {
		t.Error("no Lock returned: the operator always deleted the node before the listing, and the case was not tried")
	}
}
