package cache_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The servers' database replaced under a running view — emptied, or
// restored from an older backup: the view ends trusted and equal to what
// the servers hold, in bounded time and work, and says that it started
// over.

// Bounds on what a view may cost from the replacement until it is trusted
// and equal to the server again: a view of a few dozen nodes that reads
// them once or twice stays far below; one that reads again in a loop
// (tens of thousands of reads, seconds of CPU) does not.
const (
	recoveryReads = 2000
	recoveryCPU   = 2 * time.Second
)

// connectNew opens a plain session for the test: after a replaced
// database, a session opened before never gets one again.
func connectNew(t *testing.T, ens *zktest.Ensemble) *zk.Conn {
	t.Helper()
	conn, err := zktest.Connect(ens.Servers(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// backupNow takes a backup of ens once conn's changes are on its leader.
func backupNow(t *testing.T, ens *zktest.Ensemble, conn *zk.Conn) *zktest.Backup {
	t.Helper()
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	b, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaceAndRecover waits until c is trusted and holds every change made
// before, closes conn, replaces the database (replace), runs then with a
// session opened after it (the changes of the new history), and checks
// that the view recovers (recovered). It returns that session.
func replaceAndRecover(t *testing.T, ens *zktest.Ensemble, c *cache.Cache, conn *zk.Conn, replace func() error, then func(*zk.Conn), root string, maxDepth int) *zk.Conn {
	t.Helper()
	if _, err := c.Trust(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	began, cpu0, reads0 := time.Now(), testkit.CPUTime(), c.Stats().Reads
	if err := replace(); err != nil {
		t.Fatal(err)
	}
	conn = connectNew(t, ens)
	if then != nil {
		then(conn)
	}
	recovered(t, c, conn, root, maxDepth, began, cpu0, reads0)
	return conn
}

// recovered waits until c is trusted and, after a Sync, holds exactly
// the tree at root on the server (to maxDepth), and checks what that cost
// since the replacement began (cpu0: the process's CPU time then; reads0:
// the cache's reads then).
func recovered(t *testing.T, c *cache.Cache, conn *zk.Conn, root string, maxDepth int, began time.Time, cpu0 time.Duration, reads0 int64) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	var last string
	deadline := time.Now().Add(45 * time.Second)
	for {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Trust(tctx)
		if err == nil {
			err = c.Sync(tctx)
		}
		cancel()
		if err == nil {
			if last = diff(nodesOf(c.Snapshot()), readTree(t, conn, root, maxDepth)); last == "" && c.Snapshot().Trusted() {
				break
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the view is not trusted and equal to the server 45 s after the replacement:\n%s", last)
		}
	}
	wall, cpu, reads := time.Since(began), testkit.CPUTime()-cpu0, c.Stats().Reads-reads0
	t.Logf("recovered in %v: %d reads, %v of CPU", wall.Round(time.Millisecond), reads, cpu.Round(time.Millisecond))
	if reads > recoveryReads || cpu > recoveryCPU {
		t.Fatalf("recovery cost %d reads and %v of CPU; a view of this size needs far less (bounds %d, %v): a read loop",
			reads, cpu, recoveryReads, recoveryCPU)
	}
}

// startedOver checks that the view said it started over: a Deleted
// whose Err wraps connection.ErrNewHistory.
func startedOver(t *testing.T, rec *recorder) {
	t.Helper()
	for _, ev := range rec.all() {
		if ev.Type == cache.Deleted && errors.Is(ev.Err, connection.ErrNewHistory) {
			return
		}
	}
	t.Fatalf("no Deleted event wraps connection.ErrNewHistory; events:\n%s", detail(rec.all(), ""))
}

// loggedStartOver checks that the view at path logged that it started
// over, once, as the logging conventions say: a Warn named for the cache,
// with its path and the error wrapping connection.ErrNewHistory.
func loggedStartOver(t *testing.T, logs *testkit.Logs, path string) {
	t.Helper()
	lines := logs.With("cache: the servers' database was replaced; the view starts over")
	if len(lines) != 1 {
		t.Fatalf("%d start-over lines, want 1: %+v", len(lines), logs.All())
	}
	r := lines[0]
	if e, _ := r.Attrs["error"].(error); r.Level != slog.LevelWarn || r.Attrs["path"] != path || !errors.Is(e, connection.ErrNewHistory) {
		t.Errorf("start-over line %+v: want Warn, path %s, an error wrapping ErrNewHistory", r, path)
	}
	if err := logs.CheckConventions("cache"); err != nil {
		t.Error(err)
	}
}

// tree makes the nodes of paths with data, parents first.
func tree(t *testing.T, conn *zk.Conn, data string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		mustCreate(t, conn, p, []byte(data))
	}
}

// bump moves the servers' zxid on by n changes, so that a history made
// after the replacement stays behind it.
func bump(t *testing.T, conn *zk.Conn, n int) {
	t.Helper()
	for i := range n {
		p := fmt.Sprintf("/bump%d", i)
		mustCreate(t, conn, p, nil)
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNodeViewStartsOverAfterWipe(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	bump(t, conn, 30)
	tree(t, conn, "pre-wipe", "/cfg")
	logs := testkit.NewLogs()
	client := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second), connection.WithLogger(logs.Logger()))
	c := newCache(t, client, "/cfg", cache.WithMaxDepth(0))
	rec := record(t, c)
	replaceAndRecover(t, ens, c, conn, ens.WipeDatabase, func(conn *zk.Conn) { tree(t, conn, "post-wipe", "/cfg") }, "/cfg", 0)
	if n, _ := c.Get("/cfg"); string(n.Data) != "post-wipe" {
		t.Fatalf("view after the wipe: %q", n.Data)
	}
	startedOver(t, rec)
	loggedStartOver(t, logs, "/cfg")
	if testkit.SessionHistory(t, client) != 1 {
		t.Fatalf("the client's history after the wipe: %d, want 1", testkit.SessionHistory(t, client))
	}
}

func TestTreeViewStartsOverAfterWipe(t *testing.T) { inWatchModes(t, testTreeViewStartsOverAfterWipe) }

func testTreeViewStartsOverAfterWipe(t *testing.T, opts ...cache.Option) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	bump(t, conn, 30)
	tree(t, conn, "old", "/app", "/app/a", "/app/a/x", "/app/a/y", "/app/b", "/app/b/z", "/app/gone", "/app/gone/k")
	client := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	c := newCache(t, client, "/app", opts...)
	rec := record(t, c)
	replaceAndRecover(t, ens, c, conn, ens.WipeDatabase, func(conn *zk.Conn) {
		// Some paths again, with other data; some new; some not.
		tree(t, conn, "new", "/app", "/app/a", "/app/a/x", "/app/b", "/app/b/z", "/app/c")
	}, "/app", -1)
	startedOver(t, rec)
}

func TestTreeViewFollowsRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	tree(t, conn, "v1", "/app", "/app/a", "/app/b", "/app/b/x")
	backup := backupNow(t, ens, conn)
	client := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	c := newCache(t, client, "/app")
	rec := record(t, c)
	// After the backup: changes the restore takes back.
	if _, err := conn.Set("/app/a", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete("/app/b/x", -1); err != nil {
		t.Fatal(err)
	}
	tree(t, conn, "v2", "/app/c")
	bump(t, conn, 20)
	replaceAndRecover(t, ens, c, conn, func() error { return ens.RestoreBackup(backup) }, nil, "/app", -1)
	if n, _ := c.Get("/app/a"); string(n.Data) != "v1" {
		t.Fatalf("/app/a after the restore: %q, want the backup's v1", n.Data)
	}
	startedOver(t, rec)
}

// TestTreeViewStartsOverWhenDataGoBack: servers restored from a backup
// of their current epoch elect a leader in the next one, so their zxids
// go on from above every zxid the client heard, and the client sees no
// new history; only the data go back: a node's czxid the same, its mzxid
// older than the view's.
func TestTreeViewStartsOverWhenDataGoBack(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	tree(t, conn, "v1", "/app", "/app/a", "/app/b", "/app/b/x")
	backup := backupNow(t, ens, conn)
	// A session the backup does not hold: the restored servers say it
	// expired.
	client := open(t, ens.Servers(), connection.WithSessionTimeout(4*time.Second))
	c := newCache(t, client, "/app")
	rec := record(t, c)
	if _, err := conn.Set("/app/a", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set("/app/b/x", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	replaceAndRecover(t, ens, c, conn, func() error {
		if n, _ := c.Get("/app/a"); string(n.Data) != "v2" {
			t.Fatalf("/app/a before the restore: %q", n.Data)
		}
		return ens.RestoreBackup(backup)
	}, nil, "/app", -1)
	if n, _ := c.Get("/app/a"); string(n.Data) != "v1" {
		t.Fatalf("/app/a after the restore: %q, want the backup's v1", n.Data)
	}
	if h := testkit.SessionHistory(t, client); h != 0 {
		t.Fatalf("the client's history: %d; this test wants the zxids to go forward (0)", h)
	}
	startedOver(t, rec)
}
