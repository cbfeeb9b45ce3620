package curatorqueue_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// TestTakeNeverHoldsALockNodeMadeAgainByAnother: a consumer's lock node
// (WithLockPath) is made and read with a watch; before the hold starts,
// an operator writes to it (its watch fires for a change of the data),
// deletes it, and another consumer's session makes the message's lock node
// again. The consumer's lock is gone: Take must not hand out the message
// locked on the other consumer's node (two consumers would hold it).
func TestTakeNeverHoldsALockNodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	qpath, lpath := root+"/q", root+"/locks"
	ctx := ctxFor(t, time.Minute)
	obs := ens.Conn(t)
	other := ens.Conn(t) // the other consumer's session
	injected := make(chan error, 1)
	var armed sync.Once
	ob := &connection.Observer{
		Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
			if r.Op != "getData" || !r.Watch || !strings.HasPrefix(r.Path, lpath+"/") {
				return nil
			}
			node := r.Path
			return func(d connection.RequestDone) {
				if d.Err != nil {
					return
				}
				armed.Do(func() {
					if _, err := obs.Set(node, []byte("operator"), -1); err != nil {
						injected <- err
						return
					}
					time.Sleep(300 * time.Millisecond) // the notification reaches the consumer
					if err := obs.Delete(node, -1); err != nil {
						injected <- err
						return
					}
					_, err := other.Create(node, []byte("the other consumer"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
					injected <- err
				})
			}
		},
	}
	c := open(t, ens.Servers(), connection.WithObserver(ob))
	q := newQueue(t, c, qpath, "plain", curatorqueue.WithLockPath(lpath))
	if _, err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := q.Take(tctx)
	select {
	case ierr := <-injected:
		if ierr != nil {
			t.Fatalf("fault not injected: %v", ierr)
		}
	default:
		t.Fatal("the lock node was never read with a watch")
	}
	if err != nil {
		t.Logf("Take = %v", err) // nothing held twice
		return
	}
	defer m.Release(ctx) //nolint:errcheck // the verdict is below
	_, st, gerr := obs.Get(lpath + "/" + m.Name())
	if gerr == nil && st.EphemeralOwner == other.SessionID() && m.Locked() && !closed(m.Done()) {
		t.Fatalf("Take handed out message %s locked (Done open) while another consumer's session holds its lock node (czxid %#x)", m.Name(), st.Czxid)
	}
}
