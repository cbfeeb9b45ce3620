package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestTakeWhoseSessionExpiresAfterAWriteToItsTakenNodeIsNotADeletion: a
// worker's taken node is made and watched; before the hold starts, an
// operator writes to the node (its watch fires for a change of the data)
// and the worker's session expires, taking the node with it. Nobody
// deleted the node: the take must not fail with connection.ErrNodeDeleted
// (or ErrItemLost). The session's end restarts the take, which takes the
// item in the next session.
func TestTakeWhoseSessionExpiresAfterAWriteToItsTakenNodeIsNotADeletion(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 60*time.Second)
	obs := ens.Conn(t)
	p := ens.Proxy(t)

	var (
		once      sync.Once
		watched   = make(chan string, 1) // the taken node, once read with a watch
		injected  = make(chan error, 1)
		takenDir  = path + "/taken/"
		entryDir  = path + "/entries/"
		armed     sync.Once
		entryRead = make(chan struct{})
	)
	ob := &connection.Observer{
		Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
			switch {
			case r.Op == "getData" && r.Watch && strings.HasPrefix(r.Path, takenDir):
				p := r.Path
				return func(d connection.RequestDone) {
					if d.Err == nil {
						select {
						case watched <- p:
						default:
						}
					}
				}
			case r.Op == "getData" && !r.Watch && strings.HasPrefix(r.Path, entryDir):
				return func(connection.RequestDone) {
					// The take waits for this read before it confirms the
					// hold: write to the taken node, let its watch fire,
					// then expire the session.
					armed.Do(func() {
						defer close(entryRead)
						var tpath string
						select {
						case tpath = <-watched:
						case <-time.After(10 * time.Second):
							injected <- errors.New("the taken node was not read with a watch")
							return
						}
						once.Do(func() {
							if _, err := obs.Set(tpath, []byte("operator"), -1); err != nil {
								injected <- err
								return
							}
							time.Sleep(300 * time.Millisecond) // the notification reaches the worker
							if _, err := p.ExpireSession(); err != nil {
								injected <- err
								return
							}
							injected <- nil
						})
					})
				}
			}
			return nil
		},
	}
	c := open(t, p.Servers(), connection.WithObserver(ob), connection.WithSessionTimeout(10*time.Second))
	sid := c.Session().ID()
	q := newQueue(t, c, path)
	if err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := q.Take(ctx)
	select {
	case ierr := <-injected:
		if ierr != nil {
			t.Fatalf("fault not injected: %v", ierr)
		}
	default:
		t.Fatal("the take never read its entry")
	}
	if s := c.Session(); s == nil || s.ID() == sid {
		t.Fatal("the session did not change: not the case under test")
	}
	if errors.Is(err, connection.ErrNodeDeleted) || errors.Is(err, queue.ErrItemLost) {
		t.Fatalf("Take = %v; nobody deleted the taken node: it went with the expired session", err)
	}
	if err != nil {
		t.Fatalf("Take = %v; want the item, taken again in the next session", err)
	}
	if string(it.Data()) != "x" {
		t.Fatalf("Take gave %q", it.Data())
	}
	if err := it.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "nothing left of the take", func() error {
		return leftBehind(t, obs, path, "/taken", "/entries")
	})
}

// TestTakeNeverHoldsATakenNodeMadeAgainByAnother: a worker's taken node
// is made and watched; before the hold starts, an operator writes to it
// (its watch fires for a change of the data), deletes it, and another
// worker's session makes the taken node of the same item again. The
// worker's node is gone: its take must not hand out the item with a hold
// on the other worker's node (two workers would hold one item).
func TestTakeNeverHoldsATakenNodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 60*time.Second)
	obs := ens.Conn(t)
	other := ens.Conn(t) // the other worker's session

	var (
		watched  = make(chan string, 1)
		injected = make(chan error, 1)
		takenDir = path + "/taken/"
		entryDir = path + "/entries/"
		armed    sync.Once
	)
	ob := &connection.Observer{
		Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
			switch {
			case r.Op == "getData" && r.Watch && strings.HasPrefix(r.Path, takenDir):
				p := r.Path
				return func(d connection.RequestDone) {
					if d.Err == nil {
						select {
						case watched <- p:
						default:
						}
					}
				}
			case r.Op == "getData" && !r.Watch && strings.HasPrefix(r.Path, entryDir):
				return func(connection.RequestDone) {
					armed.Do(func() {
						var tpath string
						select {
						case tpath = <-watched:
						case <-time.After(10 * time.Second):
							injected <- errors.New("the taken node was not read with a watch")
							return
						}
						if _, err := obs.Set(tpath, []byte("operator"), -1); err != nil {
							injected <- err
							return
						}
						time.Sleep(300 * time.Millisecond) // the notification reaches the worker
						if err := obs.Delete(tpath, -1); err != nil {
							injected <- err
							return
						}
						if _, err := other.Create(tpath, []byte("the other worker"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
							injected <- err
							return
						}
						injected <- nil
					})
				}
			}
			return nil
		},
	}
	c := open(t, ens.Servers(), connection.WithObserver(ob))
	q := newQueue(t, c, path)
	if err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	it, err := q.Take(tctx)
	select {
	case ierr := <-injected:
		if ierr != nil {
			t.Fatalf("fault not injected: %v", ierr)
		}
	default:
		t.Fatal("the take never read its entry")
	}
	if err != nil {
		t.Logf("Take = %v", err) // no item: nothing held twice
		return
	}
	defer it.Release(ctx) //nolint:errcheck // the test's verdict is below
	kids, _, _ := obs.Children(path + "/taken")
	for _, k := range kids {
		_, st, err := obs.Get(path + "/taken/" + k)
		if err != nil {
			continue
		}
		if st.EphemeralOwner == other.SessionID() && !closed(it.Done()) {
			t.Fatalf("Take handed out item %s (token %#x) while the other worker's session holds its taken node %s (czxid %#x); the item's hold is open, its own node gone",
				it.Name(), it.Token(), k, st.Czxid)
		}
	}
}
