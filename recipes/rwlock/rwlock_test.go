package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

// The shared helpers, under the names these tests use.
var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
)

func newRW(t testing.TB, c *connection.Client, path string) *rwlock.RWMutex {
	t.Helper()
	rw, err := rwlock.New(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

func TestNewRefusesBadInput(t *testing.T) {
	for _, p := range []string{"", "relative", "/trailing/", "/a//b", "/"} {
		if _, err := rwlock.New(nil, "/x"); err == nil {
			t.Fatal("nil client accepted")
		}
		c := &connection.Client{}
		if _, err := rwlock.New(c, p); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("New(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

// queued waits until the lock directory has n contenders.
func queued(t *testing.T, rw *rwlock.RWMutex, c *connection.Client, n int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d contenders", n), func() error {
		ps, err := rwlock.Participants(context.Background(), c, rw.Path())
		if err == nil && len(ps) != n {
			err = fmt.Errorf("%d", len(ps))
		}
		return err
	})
}

func TestReadersShareWritersExclude(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	ctx := ctxFor(t, 30*time.Second)
	var readers []*rwlock.RWMutex
	for range 3 {
		rw := newRW(t, open(t, ens.Servers()), lock)
		if err := rw.ReadLock().TryLock(ctx); err != nil {
			t.Fatalf("a reader beside readers: %v", err)
		}
		readers = append(readers, rw)
	}
	w := newRW(t, open(t, ens.Servers()), lock)
	if err := w.WriteLock().TryLock(ctx); !errors.Is(err, rwlock.ErrLocked) {
		t.Fatalf("a writer beside readers: %v, want ErrLocked", err)
	}
	for _, r := range readers {
		if err := r.ReadLock().Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteLock().TryLock(ctx); err != nil {
		t.Fatalf("a writer alone: %v", err)
	}
	if strings.Contains(w.WriteLock().Node(), "__WRIT__") == false {
		t.Fatalf("writer node %q is not Curator's", w.WriteLock().Node())
	}
	for _, r := range readers[:1] {
		if err := r.ReadLock().TryLock(ctx); !errors.Is(err, rwlock.ErrLocked) {
			t.Fatalf("a reader beside a writer: %v, want ErrLocked", err)
		}
	}
	other := newRW(t, open(t, ens.Servers()), lock)
	if err := other.WriteLock().TryLock(ctx); !errors.Is(err, rwlock.ErrLocked) {
		t.Fatalf("a writer beside a writer: %v, want ErrLocked", err)
	}
	if err := w.WriteLock().Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestQueuedWriterIsNotOvertaken: a reader that comes after a queued
// writer waits for it (no writer starvation).
func TestQueuedWriterIsNotOvertaken(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	ctx := ctxFor(t, 30*time.Second)
	c := open(t, ens.Servers())
	r1, w, r2 := newRW(t, c, lock), newRW(t, open(t, ens.Servers()), lock), newRW(t, open(t, ens.Servers()), lock)
	if err := r1.ReadLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	go func() {
		if err := w.WriteLock().Lock(ctx); err != nil {
			order <- err.Error()
			return
		}
		order <- "writer"
		time.Sleep(50 * time.Millisecond) // a write long enough to be overtaken, if it could be
		if err := w.WriteLock().Unlock(ctx); err != nil {
			order <- err.Error()
		}
	}()
	queued(t, r1, c, 2)
	if err := r2.ReadLock().TryLock(ctx); !errors.Is(err, rwlock.ErrLocked) {
		t.Fatalf("a reader behind a queued writer: TryLock = %v, want ErrLocked", err)
	}
	go func() {
		if err := r2.ReadLock().Lock(ctx); err != nil {
			order <- err.Error()
			return
		}
		order <- "reader"
	}()
	queued(t, r1, c, 3)
	if err := r1.ReadLock().Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if first, second := <-order, <-order; first != "writer" || second != "reader" {
		t.Fatalf("order %q then %q, want the queued writer first", first, second)
	}
	if err := r2.ReadLock().Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestDowngrade: write, read, release write. The read node takes the
// writer's place, so a writer queued behind stays behind until the read
// is released.
func TestDowngrade(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	ctx := ctxFor(t, 30*time.Second)
	c := open(t, ens.Servers())
	a, b := newRW(t, c, lock), newRW(t, open(t, ens.Servers()), lock)
	if err := a.WriteLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wToken := a.WriteLock().Token()
	bLocked := make(chan error, 1)
	go func() { bLocked <- b.WriteLock().Lock(ctx) }()
	queued(t, a, c, 2)
	if err := a.ReadLock().Lock(ctx); err != nil {
		t.Fatalf("downgrade: %v", err)
	}
	if n := a.ReadLock().Node(); !strings.HasSuffix(n, "__READ__"+a.WriteLock().Node()[len(a.WriteLock().Node())-10:]) {
		t.Fatalf("downgrade node %s is not at the writer's place %s", n, a.WriteLock().Node())
	}
	if err := a.WriteLock().Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-bLocked:
		t.Fatalf("the queued writer acquired while the downgraded reader holds: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if !a.ReadLock().Held() || a.ReadLock().Token() <= wToken {
		t.Fatalf("read hold after the downgrade: held %v, token %d (write %d)", a.ReadLock().Held(), a.ReadLock().Token(), wToken)
	}
	if err := a.ReadLock().Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-bLocked; err != nil {
		t.Fatal(err)
	}
	if err := b.WriteLock().Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWriteUnlockAfterLostHoldAndReadLockSaysLost: a read Lock while the
// write hold is lost is no downgrade (the read queues as any reader), and
// the write side's Unlock afterwards still reports the loss, as it does
// without the read Lock in between — not "not locked".
func TestWriteUnlockAfterLostHoldAndReadLockSaysLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	ctx := ctxFor(t, 30*time.Second)
	rw := newRW(t, open(t, ens.Servers()), lock)
	if err := rw.WriteLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wNode := rw.WriteLock().Node()
	// An operator deletes the write hold's node: the hold ends when the
	// deletion is heard.
	if err := ens.Conn(t).Delete(wNode, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rw.WriteLock().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the write hold outlived its node")
	}
	if err := rw.ReadLock().Lock(ctx); err != nil {
		t.Fatalf("read Lock after the write hold was lost: %v", err)
	}
	if n := rw.ReadLock().Node(); strings.HasSuffix(n, wNode[len(wNode)-10:]) {
		t.Fatalf("read node %s at the lost writer's place %s: a downgrade from a lost hold", n, wNode)
	}
	if err := rw.WriteLock().Unlock(ctx); !errors.Is(err, rwlock.ErrLockLost) {
		t.Fatalf("write Unlock after the loss and a read Lock: %v, want ErrLockLost", err)
	}
	if rw.WriteLock().Held() {
		t.Fatal("the write side still holds after its Unlock")
	}
	if err := rw.ReadLock().Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestUpgradeIsRefused(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	ctx := ctxFor(t, 30*time.Second)
	rw := newRW(t, open(t, ens.Servers()), lock)
	if err := rw.ReadLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rw.WriteLock().Lock(ctx); !errors.Is(err, rwlock.ErrUpgrade) {
		t.Fatalf("upgrade = %v, want ErrUpgrade", err)
	}
	if !rw.ReadLock().Held() || rw.WriteLock().Held() {
		t.Fatal("a refused upgrade changed the holds")
	}
	// Reentrant per side.
	if err := rw.ReadLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := rw.ReadLock().Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.ReadLock().Unlock(ctx); !errors.Is(err, rwlock.ErrNotLocked) {
		t.Fatalf("Unlock without a hold = %v, want ErrNotLocked", err)
	}
}

// TestManyReadersAndWriters: 20 readers and 8 writers, each its own
// RWMutex over four sessions, take their side over and over. A checker
// counts a writer that enters beside anyone, or anyone beside a writer,
// and write tokens must strictly increase.
func TestManyReadersAndWriters(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	ctx := ctxFor(t, 2*time.Minute)
	clients := []*connection.Client{open(t, ens.Servers()), open(t, ens.Servers()), open(t, ens.Servers()), open(t, ens.Servers())}
	var (
		mu               sync.Mutex
		readers, writers int
		violations       []string
		lastWrite        int64
		reads, writes    int
		maxReadersAtOnce int
	)
	const readersN, writersN, cycles = 20, 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, readersN+writersN)
	for i := range readersN + writersN {
		rw := newRW(t, clients[i%len(clients)], lock)
		writer := i >= readersN
		wg.Add(1)
		go func() {
			defer wg.Done()
			side := rw.ReadLock()
			if writer {
				side = rw.WriteLock()
			}
			for range cycles {
				if err := side.Lock(ctx); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if writer {
					if readers > 0 || writers > 0 {
						violations = append(violations, fmt.Sprintf("a writer entered beside %d readers and %d writers", readers, writers))
					}
					if tok := side.Token(); tok <= lastWrite {
						violations = append(violations, fmt.Sprintf("write token %d after %d", tok, lastWrite))
					} else {
						lastWrite = tok
					}
					writers++
					writes++
				} else {
					if writers > 0 {
						violations = append(violations, "a reader entered beside a writer")
					}
					readers++
					reads++
					maxReadersAtOnce = max(maxReadersAtOnce, readers)
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				if writer {
					writers--
				} else {
					readers--
				}
				mu.Unlock()
				if err := side.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(violations) > 0 {
		t.Fatalf("%d violations: %s", len(violations), strings.Join(violations[:min(5, len(violations))], "; "))
	}
	t.Logf("%d reads (up to %d at once) and %d writes; no overlap, write tokens increasing", reads, maxReadersAtOnce, writes)
}
