package mutex_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestWaiterNeverHoldsItsNodeMadeAgainByAnother: a waiter's node is
// written by an operator (its watch fires for a change of the data), so
// the waiter lists the directory again and sets its node's watch again by
// path. Between that listing and that read, its node is deleted and made
// again at the same path by another session. When the holder unlocks, the
// waiter must not return holding: its node is gone, and the node at the
// path is the other session's. Nor may its Unlock delete that node.
func TestWaiterNeverHoldsItsNodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	other := ens.Conn(t) // the session that makes the waiter's node again
	ctx := ctxFor(t, 30*time.Second)

	holder := newMutex(t, open(t, ens.Servers()), lock)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	var (
		armed atomic.Bool
		once  sync.Once
		made  = make(chan error, 1)
		node  atomic.Value // the waiter's node
	)
	fault := func() {
		n, _ := node.Load().(string)
		if err := obs.Delete(n, -1); err != nil {
			made <- err
			return
		}
		_, err := other.Create(n, []byte("another participant"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		made <- err
	}
	o := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op != "getChildren2" || r.Path != lock || !armed.Load() {
			return nil
		}
		return func(d connection.RequestDone) {
			if d.Err == nil {
				once.Do(fault)
			}
		}
	}}
	wc := open(t, ens.Servers(), connection.WithObserver(o))
	waiter := newMutex(t, wc, lock)
	locked := make(chan error, 1)
	go func() { locked <- waiter.Lock(ctx) }()

	// The waiter's node is the second in the directory.
	var wnode string
	for wnode == "" {
		kids, _, err := obs.Children(lock)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == 2 {
			for _, k := range kids {
				if lock+"/"+k != holder.Node() {
					wnode = lock + "/" + k
				}
			}
		}
		select {
		case err := <-locked:
			t.Fatalf("Lock returned %v while the lock was held", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(300 * time.Millisecond) // the waiter is waiting
	node.Store(wnode)
	armed.Store(true)
	if _, err := obs.Set(wnode, []byte("operator"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-made:
		if err != nil {
			t.Fatalf("fault not made: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never listed the directory again")
	}
	time.Sleep(300 * time.Millisecond)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-locked:
	case <-time.After(3 * time.Second):
		// Still waiting (or restarted behind the other's node): nothing
		// held twice.
		t.Log("the waiter did not return holding")
		return
	}
	if err != nil {
		t.Logf("Lock = %v", err)
		return
	}
	_, st, gerr := obs.Get(waiter.Node())
	if gerr == nil && st.EphemeralOwner == other.SessionID() && !closed(waiter.Done()) {
		t.Errorf("Lock returned holding %s (token %#x, Done open) while that node is another session's (czxid %#x)", waiter.Node(), waiter.Token(), st.Czxid)
	}
	uerr := waiter.Unlock(context.Background())
	if ok, _, err := obs.Exists(wnode); err == nil && !ok {
		t.Errorf("Unlock (%v) deleted the other session's node", uerr)
	}
}
