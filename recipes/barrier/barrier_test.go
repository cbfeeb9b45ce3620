package barrier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// waitFor starts f in a goroutine; its error arrives on the channel.
func waitFor(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// still asserts that nothing has arrived on ch (without waiting).
func still(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned (%v) while it should wait", what, err)
	default:
	}
}

// within returns what arrives on ch within d, failing the test otherwise.
func within(t *testing.T, ch <-chan error, d time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
	return nil
}

// checkedSince waits until h's waits have read the server more than n
// times in all, or fails; and fails at once if one of waits has returned
// (it was to go on waiting).
func checkedSince(t *testing.T, h *barrier.Hooks, n int64, what string, waits ...<-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for h.Checks() <= n {
		for i, ch := range waits {
			select {
			case err := <-ch:
				t.Fatalf("%s: wait %d returned (%v) while it should wait", what, i, err)
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no read of the server within 20s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBarrierSetWaitRemove(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	b := newBarrier(t, c, root+"/a/b")

	if err := b.Wait(ctx); err != nil {
		t.Fatalf("Wait on a barrier that is not up: %v", err)
	}
	if ok, err := b.IsSet(ctx); err != nil || ok {
		t.Fatalf("IsSet before Set: %v, %v", ok, err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatalf("Set twice: %v", err)
	}
	// Curator's layout: the node persistent with the default data, its
	// parent a container.
	zc := ens.Conn(t)
	data, stat, err := zc.Get(root + "/a/b")
	if err != nil || stat.EphemeralOwner != 0 || string(data) != string(c.DefaultData()) {
		t.Fatalf("barrier node: %q %+v %v", data, stat, err)
	}
	h := barrier.HookBarrier(b)
	done := waitFor(func() error { return b.Wait(ctx) })
	checkedSince(t, h, 0, "Wait")
	still(t, done, "Wait")
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if err := within(t, done, 20*time.Second, "Wait"); err != nil {
		t.Fatalf("Wait after Remove: %v", err)
	}
	if err := b.Remove(ctx); err != nil {
		t.Fatalf("Remove twice: %v", err)
	}
}

// TestBarrierWakeUps: waiters on two clients woken by everything but the
// barrier's going — changes of its data, wake-ups for no reason, a
// reconnection of a client — stay waiting, as the server still shows the
// node; they pass when it is removed.
func TestBarrierWakeUps(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c1 := open(t, proxy.Servers(), connection.WithSessionTimeout(10*time.Second))
	c2 := open(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	path := root + "/b"
	if err := newBarrier(t, c2, path).Set(ctx); err != nil {
		t.Fatal(err)
	}
	type waiter struct {
		h    *barrier.Hooks
		done <-chan error
	}
	var ws []waiter
	for _, c := range []*connection.Client{c1, c1, c2} {
		b := newBarrier(t, c, path)
		h := barrier.HookBarrier(b)
		ws = append(ws, waiter{h, waitFor(func() error { return b.Wait(ctx) })})
	}
	for i, w := range ws {
		checkedSince(t, w.h, 0, "waiter "+string(rune('0'+i)))
	}
	zc := ens.Conn(t)
	rounds := 0
	inject := func(what string, f func()) {
		t.Helper()
		n := make([]int64, len(ws))
		for i, w := range ws {
			n[i] = w.h.Checks()
		}
		f()
		for i, w := range ws {
			checkedSince(t, w.h, n[i], what, w.done)
			still(t, w.done, what)
		}
		if ok, _, err := zc.Exists(path); err != nil || !ok {
			t.Fatalf("after %s the barrier is %v (%v)", what, ok, err)
		}
		rounds++
	}
	for i := range 5 {
		inject("a data change", func() {
			if _, err := zc.Set(path, []byte{byte(i)}, -1); err != nil {
				t.Fatal(err)
			}
		})
		inject("a wake-up for no reason", func() {
			for _, w := range ws {
				if !w.h.Wake(20 * time.Second) {
					t.Fatal("no wait took the wake-up")
				}
			}
		})
	}
	// A reconnection: the connection's watches are registered again; a
	// change made meanwhile fires them.
	proxy.Cut()
	zktest.Eventually(t, 20*time.Second, "suspended", func() error {
		if c1.State() != connection.Suspended {
			return errors.New(c1.State().String())
		}
		return nil
	})
	n0, n1 := ws[0].h.Checks(), ws[1].h.Checks()
	if _, err := zc.Set(path, []byte("while cut"), -1); err != nil {
		t.Fatal(err)
	}
	proxy.Restore()
	checkedSince(t, ws[0].h, n0, "waiter 0 after the reconnection")
	checkedSince(t, ws[1].h, n1, "waiter 1 after the reconnection")
	for _, w := range ws {
		still(t, w.done, "Wait after the reconnection")
	}
	if err := zc.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if err := within(t, w.done, 20*time.Second, "Wait"); err != nil {
			t.Fatalf("Wait after the removal: %v", err)
		}
	}
	t.Logf("%d injections of wake-ups, nobody passed while the node was there", rounds+1)
}

func TestBarrierWaitCancelled(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	b := newBarrier(t, c, root+"/b")
	if err := b.Set(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := b.Wait(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its deadline: %v", err)
	}
	// A closed client: an error, at once.
	c2 := open(t, ens.Servers())
	b2 := newBarrier(t, c2, root+"/b")
	c2.Close()
	if err := b2.Wait(ctxFor(t, 10*time.Second)); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Wait on a closed client: %v", err)
	}
	if err := b2.Set(ctxFor(t, 10*time.Second)); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Set on a closed client: %v", err)
	}
}

// TestBarrierWaitFollowsSession: a waiter needs no node of its own, so
// the loss of its session does not end its wait; it passes in the next
// session when the barrier goes.
func TestBarrierWaitFollowsSession(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	ctx := ctxFor(t, 2*time.Minute)
	b := newBarrier(t, c, root+"/b")
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	h := barrier.HookBarrier(b)
	done := waitFor(func() error { return b.Wait(ctx) })
	checkedSince(t, h, 0, "Wait")
	sess := c.Session()
	proxy.Blackhole()
	<-sess.Done()
	proxy.Restore()
	zktest.Eventually(t, 30*time.Second, "a new session", func() error {
		if s := c.Session(); s == nil || s == sess {
			return errors.New("not yet")
		}
		return nil
	})
	still(t, done, "Wait after the session loss")
	zc := ens.Conn(t)
	if err := zc.Delete(root+"/b", -1); err != nil {
		t.Fatal(err)
	}
	if err := within(t, done, 30*time.Second, "Wait"); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func TestBarrierRemoveNotEmpty(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	b := newBarrier(t, c, root+"/b")
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, root+"/b/child", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("Remove of a node with a child: %v", err)
	}
}
