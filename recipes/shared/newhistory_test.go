package shared_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The servers' database replaced under a running Watcher — emptied, or
// restored from an older backup: after a Sync, Current is the server's
// value; a listener is given the server's value, and never one the new
// history did not hold; in bounded time and work.

// heard records the values a listener of a Watcher is given.
type heard struct {
	mu     sync.Mutex
	values []shared.Versioned[int32]
	done   chan struct{}
}

func listen(t *testing.T, w *shared.Watcher[int32]) *heard {
	t.Helper()
	ch, err := w.Listen(ctxFor(t, 2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	h := &heard{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for v := range ch {
			h.mu.Lock()
			h.values = append(h.values, v)
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Close(); <-h.done })
	return h
}

// since returns the values given from the i-th on.
func (h *heard) since(i int) []shared.Versioned[int32] {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]shared.Versioned[int32](nil), h.values[min(i, len(h.values)):]...)
}

func (h *heard) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.values)
}

// last waits until the last value given is want (-1 version: the node
// absent).
func (h *heard) last(t *testing.T, want int32, exists bool) {
	t.Helper()
	zktest.Eventually(t, 20*time.Second, fmt.Sprintf("the listener is given %d (exists %v)", want, exists), func() error {
		vs := h.since(0)
		if len(vs) == 0 {
			return fmt.Errorf("nothing given")
		}
		if l := vs[len(vs)-1]; l.Value != want || l.Exists() != exists {
			return fmt.Errorf("last given %+v", l)
		}
		return nil
	})
}

func countData(t *testing.T, n int32) []byte {
	t.Helper()
	b, err := shared.Int32.Encode(int64(n))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// current checks, after a Sync of w, that Current is want (exists: the
// node is there) and that the view is trusted: a Sync that succeeds
// promises every write committed before it. It returns the Sync's error,
// for the caller to wait on.
func current(t *testing.T, ctx context.Context, w *shared.Watcher[int32], want int32, exists bool) error {
	t.Helper()
	if err := w.Sync(ctx); err != nil {
		return err
	}
	cur, err := w.Current()
	if err != nil || cur.Value != want || cur.Exists() != exists {
		t.Fatalf("Current after a Sync = %+v, %v; the server holds %d (exists %v)", cur, err, want, exists)
	}
	if testkit.Closed(w.Untrusted()) {
		return fmt.Errorf("synced, not trusted")
	}
	return nil
}

func TestWatchedValueFollowsWipedDatabase(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	testkit.Bump(t, conn, 30)
	client := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	ctx := ctxFor(t, time.Minute)
	count, err := shared.NewCount(client, "/cfg/n", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := count.Set(ctx, 5); err != nil {
		t.Fatal(err)
	}
	w, err := count.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := listen(t, w)
	h.last(t, 5, true)
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return client.Stats().Replies })
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	heardBefore := h.len()
	conn = ens.Conn(t)
	if _, err := conn.Create("/cfg", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/cfg/n", countData(t, 7), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, 45*time.Second, "the watcher is trusted with the server's 7", func(ctx context.Context) error {
		return current(t, ctx, w, 7, true)
	})
	rec.Check(t, "a watched count")
	h.last(t, 7, true)
	if testkit.SessionHistory(t, client) != 1 {
		t.Fatalf("the client's history after the wipe: %d, want 1", testkit.SessionHistory(t, client))
	}

	if _, err := conn.Set("/cfg/n", countData(t, 9), -1); err != nil {
		t.Fatal(err)
	}
	if err := current(t, ctx, w, 9, true); err != nil {
		t.Fatal(err)
	}
	h.last(t, 9, true)
	// In the new history the node was absent until it held 7: the seed,
	// 7 and 9 are what it held.
	for _, v := range h.since(heardBefore) {
		if v.Exists() && v.Value != 7 && v.Value != 9 || !v.Exists() && v.Value != 0 {
			t.Errorf("after the wipe the listener was given %+v, which the server never held", v)
		}
	}
}

func TestWatchedValueFollowsRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	client := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	ctx := ctxFor(t, time.Minute)
	kept, err := shared.NewCount(client, "/cfg/kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := shared.NewCount(client, "/cfg/gone", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Set(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	// After the backup: changes the restore takes back.
	if _, err := kept.Set(ctx, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Set(ctx, 3); err != nil {
		t.Fatal(err)
	}
	testkit.Bump(t, conn, 20)
	wk, err := kept.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wg, err := gone.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hk, hg := listen(t, wk), listen(t, wg)
	hk.last(t, 8, true)
	hg.last(t, 3, true)
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return client.Stats().Replies })
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	keptBefore := hk.len()
	conn = ens.Conn(t)
	rec.Wait(t, 45*time.Second, "the watchers are trusted with the backup's values", func(ctx context.Context) error {
		if err := current(t, ctx, wk, 5, true); err != nil {
			return err
		}
		return current(t, ctx, wg, 0, false)
	})
	rec.Check(t, "two watched counts")
	if testkit.SessionHistory(t, client) != 1 {
		t.Fatalf("the client's history after the restore: %d, want 1", testkit.SessionHistory(t, client))
	}
	hk.last(t, 5, true)
	hg.last(t, 0, false)

	if _, err := conn.Set("/cfg/kept", countData(t, 6), -1); err != nil {
		t.Fatal(err)
	}
	if err := current(t, ctx, wk, 6, true); err != nil {
		t.Fatal(err)
	}
	hk.last(t, 6, true)
	// The node was there all along in the restored history, with 5 and
	// then 6: the seed was never its value.
	for _, v := range hk.since(keptBefore) {
		if !v.Exists() || v.Value != 5 && v.Value != 6 {
			t.Errorf("after the restore the listener of /cfg/kept was given %+v, which the server never held", v)
		}
	}
}

// TestWatchedValueMadeAgainAtSameZxidsAfterWipe: after a wipe the same
// writes make the node again at the very zxid and version it had before,
// with another value. The client heard the servers' newest zxid (a read),
// so its next session is of a new history: the watch starts over and
// reads the node; Current and the listener give the new value.
func TestWatchedValueMadeAgainAtSameZxidsAfterWipe(t *testing.T) {
	madeAgainAtSameZxids(t, true)
}

// TestIdleWatchedValueMadeAgainAtSameZxidsAfterWipe: as above, but the
// watcher's client is idle after the changes that follow its last read:
// it hears the servers' newest zxid only in its pings' answers. Those
// are zxids it heard all the same: its next session must be of a new
// history, and the watch must give the new value.
func TestIdleWatchedValueMadeAgainAtSameZxidsAfterWipe(t *testing.T) {
	madeAgainAtSameZxids(t, false)
}

func madeAgainAtSameZxids(t *testing.T, hear bool) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	// The same writes from a new server on give the same zxids: this
	// session's creation, then the nodes.
	conn := ens.Conn(t)
	write := func(conn *zk.Conn, n int32) *zk.Stat {
		t.Helper()
		if _, err := conn.Create("/cfg", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create("/cfg/n", countData(t, n), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, stat, err := conn.Get("/cfg/n")
		if err != nil {
			t.Fatal(err)
		}
		return stat
	}
	before := write(conn, 5)
	// The watcher's client reaches the servers through a proxy, so that
	// its next session comes after those writes.
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	count, err := shared.NewCount(client, "/cfg/n", 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := count.Watch(ctxFor(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	h := listen(t, w)
	h.last(t, 5, true)
	testkit.Bump(t, conn, 30)
	if hear {
		if err := client.Sync(ctxFor(t, 10*time.Second), "/"); err != nil {
			t.Fatal(err)
		}
	} else {
		replies := client.Stats().Replies
		zktest.Eventually(t, 10*time.Second, "the watcher's client pings after the bump", func() error {
			if client.Stats().Replies <= replies {
				return fmt.Errorf("no answer since")
			}
			return nil
		})
	}
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return client.Stats().Replies })
	proxy.Cut()
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	after := write(conn, 7)
	if after.Czxid != before.Czxid || after.Mzxid != before.Mzxid || after.Version != before.Version {
		t.Fatalf("the node made again at czxid %#x mzxid %#x version %d, before %#x %#x %d: this test needs the same",
			after.Czxid, after.Mzxid, after.Version, before.Czxid, before.Mzxid, before.Version)
	}
	proxy.Restore()
	rec.Wait(t, 45*time.Second, "the watcher is trusted with the server's 7", func(ctx context.Context) error {
		return current(t, ctx, w, 7, true)
	})
	rec.Check(t, "a watched count")
	h.last(t, 7, true)
	if testkit.SessionHistory(t, client) != 1 {
		t.Fatalf("the client's history after the wipe: %d, want 1", testkit.SessionHistory(t, client))
	}
}
