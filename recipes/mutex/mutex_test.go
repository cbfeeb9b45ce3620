package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// curatorNode is Curator's protected mutex node name.
var curatorNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)

func TestNewRefusesBadPaths(t *testing.T) {
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	for _, p := range []string{"", "rel", "/a/", "/a//b", "/a/../b", "/", "/a\x00"} {
		if _, err := mutex.New(c, p); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("New(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	if _, err := mutex.New(nil, "/a"); err == nil {
		t.Error("New with a nil client succeeded")
	}
}

func TestLockUnlockReentrant(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 20*time.Second)
	m := newMutex(t, c, root+"/lock")

	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrNotLocked) {
		t.Fatalf("Unlock before Lock = %v, want ErrNotLocked", err)
	}
	if !closed(m.Done()) || m.Token() != 0 || m.Context().Err() == nil {
		t.Fatal("an unheld mutex has an open Done, a token or a live context")
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	node := m.Node()
	if name := node[len(root+"/lock/"):]; !curatorNode.MatchString(name) {
		t.Fatalf("node %q is not Curator's protected layout", name)
	}
	if m.Token() <= 0 || closed(m.Done()) || m.Context().Err() != nil {
		t.Fatalf("held: token %d, done %v, ctx %v", m.Token(), closed(m.Done()), m.Context().Err())
	}
	_, st, err := c.Get(ctx, node)
	if err != nil || st.EphemeralOwner != c.Session().ID() || st.Czxid != m.Token() {
		t.Fatalf("node owner %#x czxid %d, session %#x token %d: %v", st.EphemeralOwner, st.Czxid, c.Session().ID(), m.Token(), err)
	}
	done, hctx := m.Done(), m.Context()

	if err := m.Lock(ctx); err != nil { // reentrant: no new node
		t.Fatal(err)
	}
	if kids, _, _ := c.Children(ctx, root+"/lock"); len(kids) != 1 {
		t.Fatalf("reentrant Lock made %d nodes, want 1", len(kids))
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !m.Held() || closed(done) {
		t.Fatal("first of two Unlocks released the lock")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Held() || !closed(done) || hctx.Err() == nil {
		t.Fatal("released lock: still held, or Done/Context not ended")
	}
	if ok, _, _ := c.Exists(ctx, node); ok {
		t.Fatal("lock node survives the last Unlock")
	}
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrNotLocked) {
		t.Fatalf("third Unlock = %v, want ErrNotLocked", err)
	}
}

// TestFirstLockOfADirectoryNeedsNoListing: the first node ever made in a
// lock directory (sequence 0) holds without a listing; the next Lock in
// the same directory lists it. Every Lock also sets a watch on its own
// node (a hold ends when someone else deletes it). The listing goes right
// behind the create, before its answer, so it is sent (and not used) for
// the first node too. Counted as the replies the client got, on a session
// whose pings are 10 s apart.
func TestFirstLockOfADirectoryNeedsNoListing(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers(), connection.WithSessionTimeout(30*time.Second))
	m := newMutex(t, c, root+"/lock")
	ctx := ctxFor(t, 20*time.Second)
	replies := func(f func() error) int64 {
		t.Helper()
		before := c.Stats().Replies
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return c.Stats().Replies - before
	}
	// No directory yet: the create fails (NoNode), and so does the
	// listing sent behind it; the directory is made, the create is sent
	// again, the node's watch is set — and nothing else.
	if n := replies(func() error { return m.Lock(ctx) }); n != 5 {
		t.Fatalf("first Lock of a new directory: %d replies, want 5 (no listing after the create)", n)
	}
	if !strings.HasSuffix(m.Node(), "-lock-0000000000") {
		t.Fatalf("node %s: want sequence 0", m.Node())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The second Lock may return before its node's watch is answered (the
	// listing said it holds): counted with its Unlock, whose delete is
	// answered after the watch — unless the hold ended before the watch
	// was sent, and it never was.
	cycle := func() error {
		if err := m.Lock(ctx); err != nil {
			return err
		}
		return m.Unlock(ctx)
	}
	if n := replies(cycle); n != 4 && n != 3 {
		t.Fatalf("second Lock and Unlock: %d replies, want 4 (the create, a listing, the node's watch, the delete), or 3 without the watch", n)
	}
}

func TestTryLock(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	a := newMutex(t, open(t, ens.Servers()), root+"/lock")
	bc := open(t, ens.Servers())
	b := newMutex(t, bc, root+"/lock")
	ctx := ctxFor(t, 20*time.Second)

	if err := a.TryLock(ctx); err != nil {
		t.Fatalf("TryLock of a free lock: %v", err)
	}
	if err := b.TryLock(ctx); !errors.Is(err, mutex.ErrLocked) {
		t.Fatalf("TryLock of a held lock = %v, want ErrLocked", err)
	}
	if kids, _, _ := bc.Children(ctx, root+"/lock"); len(kids) != 1 {
		t.Fatalf("failed TryLock left %d nodes, want only the holder's", len(kids))
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCancelWhileWaitingLeavesNothing(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ac := open(t, ens.Servers())
	a := newMutex(t, ac, root+"/lock")
	b := newMutex(t, open(t, ens.Servers()), root+"/lock")
	ctx := ctxFor(t, 20*time.Second)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	before := a.Node()

	wait, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := b.Lock(wait)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with a short context = %v, want DeadlineExceeded", err)
	}
	if b.Held() {
		t.Fatal("failed Lock left the mutex held")
	}
	kids, _, err := ac.Children(ctx, root+"/lock")
	if err != nil || len(kids) != 1 || root+"/lock/"+kids[0] != before {
		t.Fatalf("children after a cancelled wait: %v, %v; want only the holder's", kids, err)
	}
	if !a.Held() || closed(a.Done()) {
		t.Fatal("the holder was disturbed")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestFIFO(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/lock"
	holder := newMutex(t, open(t, ens.Servers()), lock)
	observer := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	const n = 20
	order := make(chan int, n)
	errs := make(chan error, n)
	for i := range n {
		m := newMutex(t, open(t, ens.Servers()), lock)
		go func() {
			if err := m.Lock(ctx); err != nil {
				errs <- err
				return
			}
			order <- i
			errs <- m.Unlock(ctx)
		}()
		// Queue them one after another: participant i's node exists before
		// participant i+1 starts.
		zktest.Eventually(t, 10*time.Second, "participant queued", func() error {
			kids, _, err := observer.Children(ctx, lock)
			if err != nil {
				return err
			}
			if len(kids) != i+2 {
				return fmt.Errorf("%d nodes", len(kids))
			}
			return nil
		})
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if got := <-order; got != i {
			t.Fatalf("acquisition %d went to participant %d, want %d (FIFO)", i, got, i)
		}
	}
}

func TestParticipantsAndRevocation(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/lock"
	revoked := make(chan struct{}, 1)
	holder := newMutex(t, open(t, ens.Servers()), lock, mutex.WithData([]byte("holder")),
		mutex.WithRevocation(func() { revoked <- struct{}{} }))
	ctx := ctxFor(t, 30*time.Second)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiters := make(chan error, 2)
	for _, name := range []string{"w1", "w2"} {
		m := newMutex(t, open(t, ens.Servers()), lock, mutex.WithData([]byte(name)))
		go func() {
			if err := m.Lock(ctx); err != nil {
				waiters <- err
				return
			}
			waiters <- m.Unlock(ctx)
		}()
		zktest.Eventually(t, 10*time.Second, "waiter queued", func() error {
			ps, err := holder.Participants(ctx)
			if err != nil {
				return err
			}
			if string(ps[len(ps)-1].Data) != name {
				return fmt.Errorf("last is %q", ps[len(ps)-1].Data)
			}
			return nil
		})
	}
	ps, err := holder.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 || string(ps[0].Data) != "holder" || ps[0].Path != holder.Node() || ps[0].Token != holder.Token() {
		t.Fatalf("participants %+v; want the holder first", ps)
	}
	for i, p := range ps {
		if p.Kind != "mutex" || p.Session == 0 || (i > 0 && p.Seq <= ps[i-1].Seq) {
			t.Fatalf("participant %d: %+v", i, p)
		}
	}

	other := open(t, ens.Servers())
	if err := mutex.Revoke(ctx, other, ps[0].Path); err != nil {
		t.Fatal(err)
	}
	select {
	case <-revoked:
	case <-ctx.Done():
		t.Fatal("the holder never heard the revocation")
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-waiters; err != nil {
			t.Fatal(err)
		}
	}
}

func TestMisuseAfterCloseAndCancelledContext(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	observer := ens.Conn(t)

	c := open(t, ens.Servers())
	m := newMutex(t, c, root+"/lock")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Lock(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context = %v, want context.Canceled", err)
	}
	if kids, _, err := observer.Children(root + "/lock"); err == nil && len(kids) != 0 {
		t.Fatalf("a cancelled Lock left nodes: %v", kids)
	}

	ctx := ctxFor(t, 20*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatal("Done still open after the client closed")
	}
	if err := m.Unlock(ctx); !errors.Is(err, mutex.ErrLockLost) {
		t.Fatalf("Unlock after Close = %v, want ErrLockLost", err)
	}
	if err := m.Lock(ctx); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Lock after Close = %v, want connection.ErrClosed", err)
	}
	if err := m.TryLock(ctx); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("TryLock after Close = %v, want connection.ErrClosed", err)
	}
	// Closing the session deleted its node at once.
	if kids, _, err := observer.Children(root + "/lock"); err == nil && len(kids) != 0 {
		t.Fatalf("nodes left after Close: %v", kids)
	}
}
