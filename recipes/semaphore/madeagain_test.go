package semaphore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestLeaseNeverGrantedOnANodeMadeAgainByAnother: a lease node is made
// and counted within the limit by a watched listing; before its node's
// watch is set (a read by path), the node is deleted and made again at
// the same path by another session. TryAcquire must not return a lease
// held on the other session's node, and releasing what it returned must
// not delete that node.
func TestLeaseNeverGrantedOnANodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	spath := ens.Root(t) + "/sem"
	leases := spath + "/leases"
	obs := ens.Conn(t)
	other := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)

	var (
		once sync.Once
		made = make(chan error, 1)
		node string
	)
	fault := func() {
		kids, _, err := obs.Children(leases)
		if err != nil || len(kids) != 1 {
			made <- err
			return
		}
		node = leases + "/" + kids[0]
		if err := obs.Delete(node, -1); err != nil {
			made <- err
			return
		}
		_, err = other.Create(node, []byte("another participant"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		made <- err
	}
	o := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op != "getChildren2" || !r.Watch || r.Path != leases {
			return nil
		}
		return func(d connection.RequestDone) {
			if d.Err == nil {
				once.Do(fault)
			}
		}
	}}
	s := newSem(t, open(t, ens.Servers(), connection.WithObserver(o)), spath, 1)
	got, err := s.TryAcquire(ctx, 1)
	select {
	case ferr := <-made:
		if ferr != nil || node == "" {
			t.Fatalf("fault not made: %v", ferr)
		}
	default:
		t.Fatal("the lease directory was never listed with a watch")
	}
	if err != nil {
		t.Logf("TryAcquire = %v", err) // no lease: nothing held twice
		return
	}
	l := got[0]
	_, st, gerr := obs.Get(l.Node())
	if gerr == nil && st.EphemeralOwner == other.SessionID() && !closedCh(l.Done()) {
		t.Errorf("TryAcquire granted a lease on %s (token %#x, Done open) while that node is another session's (czxid %#x)", l.Node(), l.Token(), st.Czxid)
	}
	rerr := l.Release(context.Background())
	if ok, _, err := obs.Exists(node); err == nil && !ok {
		t.Errorf("Release (%v) deleted the other session's node", rerr)
	}
}
