package cache_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Shapes of a replaced database the other tests of it do not make: a deep
// tree, several views of one client with their options (a depth, a
// selector, WithClearOnSessionLoss, a node), a view made while the client
// is cut off, the restore done while the client is blackholed. Each view
// ends trusted and equal to the server, in bounded reads and CPU.

// settledTo waits up to d for c to be trusted and, after a Sync, hold
// exactly want(); it returns the last difference.
func settledTo(c *cache.Cache, want func() map[string]tnode, d time.Duration) string {
	deadline := time.Now().Add(d)
	last := "not compared"
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := c.Trust(ctx)
		if err == nil {
			err = c.Sync(ctx)
		}
		cancel()
		if err != nil {
			last = err.Error()
			continue
		}
		if last = diff(nodesOf(c.Snapshot()), want()); last == "" && c.Snapshot().Trusted() {
			return ""
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

func deepChain(root string, n int) []string {
	var out []string
	p := root
	for i := range n {
		p = fmt.Sprintf("%s/d%d", p, i)
		out = append(out, p)
	}
	return out
}

func TestViewsOfOneClientStartOverAfterRestoreWhileBlackholed(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	chain := deepChain("/app", 14)
	paths := append([]string{"/app", "/app/w", "/app/skip", "/app/skip/x", "/app/skip/y"}, chain...)
	for i := range 10 {
		paths = append(paths, fmt.Sprintf("/app/w/n%d", i))
	}
	tree(t, conn, "v1", paths...)
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	// After the backup: what the restore takes back.
	if _, err := conn.Set("/app/w/n0", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(chain[len(chain)-1], []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/app/w/n1", "/app/skip/x"} {
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	tree(t, conn, "v2", "/app/w/k", chain[len(chain)-1]+"/deeper", "/app/new", "/app/new/leaf")
	bump(t, conn, 20)

	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	sel := cache.Selector{Accept: func(p string) bool { return !strings.HasSuffix(p, "/skip") }}
	type view struct {
		name string
		c    *cache.Cache
		rec  *recorder
		want func() map[string]tnode
		full bool // it held nodes when the database was replaced (and was not emptied on the lost session)
	}
	var views []view
	add := func(name, root string, depth int, s *cache.Selector, full bool, opts ...cache.Option) {
		c := newCache(t, client, root, opts...)
		want := func() map[string]tnode {
			tr := readTree(t, conn, root, depth)
			if s != nil {
				tr = selectTree(tr, root, *s)
			}
			return tr
		}
		views = append(views, view{name, c, record(t, c), want, full})
	}
	add("tree", "/app", -1, nil, true)
	add("depth 1", "/app", 1, nil, true, cache.WithMaxDepth(1))
	add("selector", "/app", -1, &sel, true, cache.WithSelector(sel))
	// Emptied on the lost session already (its Deleted carry the session's
	// error): nothing left to start over.
	add("cleared on loss", "/app", -1, nil, false, cache.WithClearOnSessionLoss())
	add("node", "/app/w/n0", 0, nil, true, cache.WithMaxDepth(0))
	add("deep node's subtree", chain[len(chain)-2], -1, nil, true)
	ctx := ctxFor(t, time.Minute)
	for _, v := range views {
		if _, err := v.c.Trust(ctx); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()

	states := client.Listen(ctx)
	began, cpu0 := time.Now(), testkit.CPUTime()
	reads0 := make([]int64, len(views))
	for i, v := range views {
		reads0[i] = v.c.Stats().Reads
	}
	proxy.Blackhole()
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	for s := range states {
		if s == connection.Lost {
			break
		}
	}
	// A view made while the client has no session.
	add("made in the outage", "/app", -1, nil, false)
	reads0 = append(reads0, 0)
	conn = connectNew(t, ens)
	tree(t, conn, "v3", "/app/w/after")
	proxy.Restore()

	var bad []string
	for i, v := range views {
		if d := settledTo(v.c, v.want, 20*time.Second); d != "" {
			bad = append(bad, fmt.Sprintf("%s: not trusted and equal to the server 20 s after the restore:\n%s\nevents: %s", v.name, d, summary(v.rec.all())))
			continue
		}
		reads := v.c.Stats().Reads - reads0[i]
		if reads > recoveryReads {
			bad = append(bad, fmt.Sprintf("%s: %d reads to recover (bound %d)", v.name, reads, recoveryReads))
		}
		if v.full && len(startOvers(v.rec)) == 0 {
			bad = append(bad, fmt.Sprintf("%s: no Deleted wraps ErrNewHistory; events: %s", v.name, summary(v.rec.all())))
		}
		if v.name == "made in the outage" {
			if so := startOvers(v.rec); len(so) > 0 {
				bad = append(bad, fmt.Sprintf("%s: a view of the new history only says it started over: %s", v.name, so[0]))
			}
		}
		t.Logf("%s: recovered, %d reads", v.name, reads)
	}
	if cpu := testkit.CPUTime() - cpu0; cpu > recoveryCPU {
		bad = append(bad, fmt.Sprintf("the recovery of %d views cost %v of CPU (bound %v)", len(views), cpu, recoveryCPU))
	}
	if h := testkit.SessionHistory(t, client); h != 1 {
		bad = append(bad, fmt.Sprintf("the client's history %d, want 1", h))
	}
	t.Logf("all recovered in %v", time.Since(began).Round(time.Millisecond))
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}

// TestViewStartsOverWhenOnlyAListingGoesBack: three servers restored from
// a backup of their current epoch (the zxids go forward, the client's
// check passes); of everything the view holds, only a listing's pzxid goes
// back: a child made and deleted after the backup. No node's czxid or
// mzxid moved, no name changed: the listing alone tells.
func TestViewStartsOverWhenOnlyAListingGoesBack(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	tree(t, conn, "v1", "/app", "/app/a", "/app/b", "/app/b/x")
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	client := open(t, ens.Servers(), connection.WithSessionTimeout(4*time.Second))
	c := newCache(t, client, "/app")
	rec := record(t, c)
	// A child made and deleted: /app/b's pzxid moves on, nothing else.
	tree(t, conn, "tmp", "/app/b/tmp")
	if err := conn.Delete("/app/b/tmp", -1); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	_, now, err := conn.Get("/app/b")
	if err != nil {
		t.Fatal(err)
	}
	held, _ := c.Get("/app/b")
	if held.Stat.Pzxid != now.Pzxid {
		t.Fatalf("/app/b's pzxid after Sync: %#x in the view, %#x on the server", held.Stat.Pzxid, now.Pzxid)
	}
	conn.Close()

	began, cpu0, reads0 := time.Now(), testkit.CPUTime(), c.Stats().Reads
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = connectNew(t, ens)
	_, st, err := conn.Get("/app/b")
	if err != nil {
		t.Fatal(err)
	}
	// Compared with what the view held before the restore: the view
	// follows the servers meanwhile, and may have started over already.
	if held.Stat.Pzxid <= st.Pzxid {
		t.Fatalf("/app/b's pzxid: %#x in the view before the restore, %#x restored; the test wants it back", held.Stat.Pzxid, st.Pzxid)
	}
	recovered(t, c, conn, "/app", -1, began, cpu0, reads0)
	if h := testkit.SessionHistory(t, client); h != 0 {
		t.Logf("the client's history: %d (the check found it; this test wants the zxids forward)", h)
	}
	startedOver(t, rec)
	// With nothing else to tell it, a view that did not start over
	// keeps a pzxid the servers never had: equal data, a Stat from the
	// old history.
	if n, _ := c.Get("/app/b"); n.Stat.Pzxid != st.Pzxid {
		t.Fatalf("/app/b's pzxid in the view: %#x, the server's %#x", n.Stat.Pzxid, st.Pzxid)
	}
}

// TestViewMadeBetweenSessionsOfALaterHistory: a client that went through a
// wiped database long ago (its sessions are of history 1) is cut off
// until its session is lost, in the same database; a view made then has
// held nothing and lived through no replacement. Once trusted, it must not
// say that its trust ended, nor that the database was replaced under it:
// Err is nil ("or nil if none has"), and no Deleted wraps ErrNewHistory.
func TestViewMadeBetweenSessionsOfALaterHistory(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	tree(t, conn, "v1", "/app", "/app/a")
	bump(t, conn, 10)
	conn.Close()
	proxy := ens.Proxy(t)
	logs := &historyLog{}
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second), connection.WithLogger(slog.New(logs)))
	ctx := ctxFor(t, time.Minute)
	if _, _, err := client.Exists(ctx, "/app"); err != nil {
		t.Fatal(err)
	}
	states := client.Listen(ctx)
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	conn = connectNew(t, ens)
	tree(t, conn, "v2", "/app", "/app/b")
	testkit.WaitState(t, states, connection.Reconnected, 20*time.Second)
	if h := testkit.SessionHistory(t, client); h != 1 {
		t.Fatalf("history after the wipe: %d, want 1", h)
	}
	replaced := len(logs.all())

	// Later, in the same database: the session lost to a cut.
	proxy.Cut()
	testkit.WaitState(t, states, connection.Lost, 20*time.Second)
	c := newCache(t, client, "/app")
	rec := record(t, c)
	proxy.Restore()
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if h := testkit.SessionHistory(t, client); h != 1 {
		t.Fatalf("history after the cut: %d, want 1 (no replacement since)", h)
	}
	var bad []string
	if err := c.Err(); err != nil {
		bad = append(bad, fmt.Sprintf("Err() = %v; want nil: no trust period of the view has ended", err))
	}
	if so := startOvers(rec); len(so) > 0 {
		bad = append(bad, "a Deleted wraps ErrNewHistory: "+so[0])
	}
	if l := logs.all()[replaced:]; len(l) > 0 {
		bad = append(bad, "logged after the cut: "+strings.Join(l, "\n  "))
	}
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}
