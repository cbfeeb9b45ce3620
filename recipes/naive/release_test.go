package naive_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestUnlockNeverDeletesTheNextHoldersNodeThatItsServerHasNotSeen: A
// holds the lock through a follower that is behind the leader (slow links
// between servers). An operator deletes A's node and B, on the leader,
// takes the lock: its node is at the same path. A, not told yet (its
// follower has applied neither), unlocks. Its release must delete its own
// node and no other: B's hold must last, and B's node stay — a read on A's
// follower alone would still show A's node, at the version B's has (0).
func TestUnlockNeverDeletesTheNextHoldersNodeThatItsServerHasNotSeen(t *testing.T) {
	t.Parallel()
	ens := testkit.NewLagging(t)
	lpath := ens.Root(t) + "/l"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newLock(t, open(t, ens.Follower, connection.WithSessionTimeout(10*time.Second)), lpath)
	bc := open(t, ens.Leader, connection.WithSessionTimeout(10*time.Second))
	b := newLock(t, bc, lpath)
	operator := ens.OnLeader(t)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const lag = 400 * time.Millisecond
	ens.Lag(t, lag)
	if err := operator.Delete(lpath, -1); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- b.Lock(ctx) }()
	time.Sleep(lag / 8) // B's create reaches the leader first
	uerr := a.Unlock(ctx)
	if err := <-locked; err != nil {
		t.Fatalf("B's Lock = %v", err)
	}
	ens.Lag(t, 0)
	if _, err := operator.Sync(lpath); err != nil {
		t.Fatal(err)
	}
	ok, st, err := operator.Exists(lpath)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || st.EphemeralOwner != bc.Session().ID() || st.Czxid != b.Token() || testkit.Closed(b.Done()) {
		t.Errorf("A's Unlock (%v) deleted B's node: B's node exists %v, B's hold lost %v (%v)", uerr, ok, testkit.Closed(b.Done()), b.Err())
	}
	_ = b.Unlock(ctx)
}

// cutLocks opens one client through a proxy under the session policy (a
// cut does not end a hold) and takes n naive locks on it, at root/l0…
func cutLocks(t *testing.T, n int, opts ...connection.Option) (*zktest.Ensemble, *zktest.Proxy, *connection.Client, []*naive.Lock, []string) {
	t.Helper()
	return cutLocksWith(t, n, func(*zktest.Proxy) {}, opts...)
}

// cutLocksWith is cutLocks, telling seen of the proxy before the client
// opens.
func cutLocksWith(t *testing.T, n int, seen func(*zktest.Proxy), opts ...connection.Option) (*zktest.Ensemble, *zktest.Proxy, *connection.Client, []*naive.Lock, []string) {
	t.Helper()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	seen(p)
	opts = append([]connection.Option{connection.WithSessionTimeout(10 * time.Second), connection.WithErrorPolicy(connection.SessionPolicy)}, opts...)
	c := open(t, p.Servers(), opts...)
	ctx := testkit.Ctx(t, 30*time.Second)
	var locks []*naive.Lock
	var paths []string
	for i := range n {
		path := fmt.Sprintf("%s/l%d", root, i)
		l := newLock(t, c, path)
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		locks, paths = append(locks, l), append(paths, path)
	}
	return ens, p, c, locks, paths
}

// leftNodes lists, through another client after a sync, which of paths
// still hold a node.
func leftNodes(t *testing.T, obs *zk.Conn, paths []string) []string {
	t.Helper()
	var left []string
	for _, path := range paths {
		if _, err := obs.Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		ok, _, err := obs.Exists(path)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			left = append(left, path)
		}
	}
	return left
}

// settleNoNodes waits up to d for paths to hold no node, and fails with
// those left.
func settleNoNodes(t *testing.T, obs *zk.Conn, paths []string, d time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := leftNodes(t, obs, paths)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d nodes orphaned %v after %v while their session lives", what, len(left), left, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUnlocksWhoseContextEndsWhileCutOffLeaveNoNodeOnceReconnected: eight
// naive locks of one client unlock while the client is cut off, each with
// a context that ends before the link returns. Once it returns, every node
// must go (in the background), while the session lives.
func TestUnlocksWhoseContextEndsWhileCutOffLeaveNoNodeOnceReconnected(t *testing.T) {
	t.Parallel()
	ens, p, c, locks, paths := cutLocks(t, 8)
	obs := ens.Conn(t)
	p.Cut()
	var wg sync.WaitGroup
	errs := make([]error, len(locks))
	for i, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			errs[i] = l.Unlock(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("Unlock %d while cut off = nil", i)
		}
		if testkit.Closed(locks[i].Done()) == false {
			t.Errorf("hold %d goes on after its Unlock", i)
		}
	}
	p.Restore()
	settleNoNodes(t, obs, paths, 8*time.Second, "after Unlocks cut off")
	if err := c.Session().Err(); err != nil {
		t.Fatalf("session ended: %v", err)
	}
}

// TestClientCloseWhileUnlocksWaitForAConnectionReturnsPromptly: eight
// Unlocks of one client wait for a connection (cut off, long contexts);
// Close must return within 3s, and so must every
// Unlock, with an error matching connection.ErrClosed.
func TestClientCloseWhileUnlocksWaitForAConnectionReturnsPromptly(t *testing.T) {
	t.Parallel()
	_, p, c, locks, _ := cutLocks(t, 8)
	p.Cut()
	ctx := testkit.Ctx(t, time.Minute)
	errs := make(chan error, len(locks))
	for _, l := range locks {
		go func() { errs <- l.Unlock(ctx) }()
	}
	time.Sleep(500 * time.Millisecond) // they wait for the link
	start := time.Now()
	cerr := c.Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close took %v (err %v)", took, cerr)
	}
	timeout := time.After(3 * time.Second)
	for i := range locks {
		select {
		case err := <-errs:
			if !errors.Is(err, connection.ErrClosed) {
				t.Errorf("Unlock after Close = %v, want ErrClosed", err)
			}
		case <-timeout:
			t.Fatalf("%d Unlocks still waiting 3s after Close", len(locks)-i)
		}
	}
	p.Restore()
}

// TestUnlockWaitingForAConnectionEndsWhenItsSessionExpiresAndDeletesNoOther:
// an Unlock waits, cut off, and the session expires meanwhile; another
// client takes the lock. Once the link returns, the Unlock must end with
// the session's loss (naive.ErrLockLost or connection.ErrSessionLost), and
// the other's node must stay.
func TestUnlockWaitingForAConnectionEndsWhenItsSessionExpiresAndDeletesNoOther(t *testing.T) {
	t.Parallel()
	ens, p, _, locks, paths := cutLocks(t, 4)
	ctx := testkit.Ctx(t, time.Minute)
	bc := open(t, ens.Servers())
	p.Cut()
	errs := make(chan error, len(locks))
	for _, l := range locks {
		go func() { errs <- l.Unlock(ctx) }()
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	var bs []*naive.Lock
	for _, path := range paths {
		b := newLock(t, bc, path)
		if err := b.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	p.Restore()
	timeout := time.After(15 * time.Second)
	for i := range locks {
		select {
		case err := <-errs:
			if !errors.Is(err, naive.ErrLockLost) && !errors.Is(err, connection.ErrSessionLost) {
				t.Errorf("Unlock across the session's expiry = %v, want the session's loss", err)
			}
		case <-timeout:
			t.Fatalf("%d Unlocks still waiting 15s after the link returned", len(locks)-i)
		}
	}
	time.Sleep(time.Second)
	for _, b := range bs {
		if testkit.Closed(b.Done()) {
			t.Errorf("B's hold of %s lost: %v", b.Path(), b.Err())
		}
	}
	if left := leftNodes(t, ens.Conn(t), paths); len(left) != len(paths) {
		t.Errorf("B's nodes left: %v of %v", left, paths)
	}
}

// TestUnlocksWithTheirAnswersDroppedLeaveNoNodeAndNextHoldersKeepTheirs:
// eight naive locks of one client unlock together; the servers' answers
// are dropped from the first delete on (it applies, unanswered), for a
// second. Another client waits for each lock. Once the link returns, every
// Unlock ends (nil or ErrOutcomeUnknown), the other takes every lock, and
// its holds last and its nodes stay.
func TestUnlocksWithTheirAnswersDroppedLeaveNoNodeAndNextHoldersKeepTheirs(t *testing.T) {
	t.Parallel()
	var p *zktest.Proxy
	var once sync.Once
	dropped := make(chan struct{})
	o := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op == "delete" {
			once.Do(func() { p.DropReplies(); close(dropped) })
		}
		return nil
	}}
	ens, px, _, locks, paths := cutLocksWith(t, 8, func(px *zktest.Proxy) { p = px }, connection.WithObserver(o))
	ctx := testkit.Ctx(t, time.Minute)
	bc := open(t, ens.Servers())
	var bs []*naive.Lock
	locked := make(chan error, len(paths))
	for _, path := range paths {
		b := newLock(t, bc, path)
		bs = append(bs, b)
		go func() { locked <- b.Lock(ctx) }()
	}
	time.Sleep(300 * time.Millisecond) // B waits on each
	errs := make(chan error, len(locks))
	for _, l := range locks {
		go func() { errs <- l.Unlock(ctx) }()
	}
	<-dropped
	time.Sleep(time.Second)
	px.Restore()
	for range locks {
		select {
		case err := <-errs:
			if err != nil && !errors.Is(err, connection.ErrOutcomeUnknown) {
				t.Errorf("Unlock = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("an Unlock still waits 20s after the link returned")
		}
	}
	for range paths {
		select {
		case err := <-locked:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("B still waits for a lock 20s after the link returned")
		}
	}
	time.Sleep(time.Second)
	for _, b := range bs {
		if testkit.Closed(b.Done()) {
			t.Errorf("B's hold of %s lost: %v", b.Path(), b.Err())
		}
	}
	if left := leftNodes(t, ens.Conn(t), paths); len(left) != len(paths) {
		t.Errorf("B's nodes left: %v of %v", left, paths)
	}
}
