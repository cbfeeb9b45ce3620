package cache_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// One history: the servers' database is never replaced. Whatever the
// faults — reconnects within the session, expiries, slow replies, servers
// killed and restarted, the leader among them — no client reports a new
// history (Session.History stays 0, nothing logged with ErrNewHistory)
// and no view starts over (no Deleted whose Err wraps
// connection.ErrNewHistory); and every view ends equal to the server.

// historyLog records what a client logs of a new history.
type historyLog struct {
	mu   sync.Mutex
	msgs []string
}

func (h *historyLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *historyLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *historyLog) WithGroup(string) slog.Handler            { return h }
func (h *historyLog) Handle(_ context.Context, r slog.Record) error {
	text := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, connection.ErrNewHistory) {
			text += " " + a.Key + "=" + err.Error()
			h.mu.Lock()
			h.msgs = append(h.msgs, text)
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *historyLog) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

// startOvers returns the Deleted events of rec whose Err wraps
// connection.ErrNewHistory.
func startOvers(rec *recorder) []string {
	var out []string
	for _, ev := range rec.all() {
		if ev.Type == cache.Deleted && errors.Is(ev.Err, connection.ErrNewHistory) {
			out = append(out, ev.Path+": "+ev.Err.Error())
		}
	}
	return out
}

// remaker churns a tree of parents with children: parents deleted and
// made again with their children at the same paths in one multi, leaves
// made again, data set — on a session of its own, straight to the
// servers, ignoring the errors of the faults.
type remaker struct {
	conn    *zk.Conn
	root    string
	parents int
	kids    int
	ops     atomic.Int64
	stop    chan struct{}
	done    chan struct{}
	rnd     *rand.Rand
}

func (r *remaker) parent(i int) string { return fmt.Sprintf("%s/p%02d", r.root, i) }
func (r *remaker) kid(i, j int) string { return fmt.Sprintf("%s/k%d", r.parent(i), j) }

func (r *remaker) fill(t *testing.T) {
	t.Helper()
	acl := zk.WorldACL(zk.PermAll)
	mustCreate(t, r.conn, r.root, []byte("root"))
	for i := range r.parents {
		reqs := []any{&zk.CreateRequest{Path: r.parent(i), Data: []byte("p"), Acl: acl}}
		for j := range r.kids {
			reqs = append(reqs, &zk.CreateRequest{Path: r.kid(i, j), Data: []byte("k"), Acl: acl})
		}
		if _, err := r.conn.Multi(reqs...); err != nil {
			t.Fatal(err)
		}
	}
}

// once makes one change; its errors are the faults'.
func (r *remaker) once() {
	acl := zk.WorldACL(zk.PermAll)
	i := r.rnd.Intn(r.parents)
	p := r.parent(i)
	data := []byte(fmt.Sprint(r.ops.Load()))
	switch r.rnd.Intn(4) {
	case 0, 1: // the parent and its children, made again at the same paths
		kids, _, err := r.conn.Children(p)
		if err != nil {
			return
		}
		var reqs []any
		for _, k := range kids {
			reqs = append(reqs, &zk.DeleteRequest{Path: p + "/" + k, Version: -1})
		}
		reqs = append(reqs, &zk.DeleteRequest{Path: p, Version: -1},
			&zk.CreateRequest{Path: p, Data: data, Acl: acl})
		for j := range r.kids {
			if r.rnd.Intn(5) > 0 {
				reqs = append(reqs, &zk.CreateRequest{Path: r.kid(i, j), Data: data, Acl: acl})
			}
		}
		if _, err := r.conn.Multi(reqs...); err != nil {
			return
		}
	case 2: // a leaf made again
		k := r.kid(i, r.rnd.Intn(r.kids))
		if _, err := r.conn.Multi(&zk.DeleteRequest{Path: k, Version: -1}, &zk.CreateRequest{Path: k, Data: data, Acl: acl}); err != nil {
			// gone: make it
			if _, err := r.conn.Create(k, data, 0, acl); err != nil {
				return
			}
		}
	default:
		if _, err := r.conn.Set(p, data, -1); err != nil {
			return
		}
	}
	r.ops.Add(1)
}

func (r *remaker) start(every time.Duration) {
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(every):
			}
			r.once()
		}
	}()
}

func (r *remaker) finish() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

func TestNoStartOverInOneHistory(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	r := &remaker{conn: conn, root: "/app", parents: 10, kids: 6, stop: make(chan struct{}), done: make(chan struct{}),
		rnd: rand.New(rand.NewSource(time.Now().UnixNano()))}
	r.fill(t)

	// Two clients: one behind a proxy (cut, blackholed, slowed, expired),
	// one straight to the servers (moved from server to server as they
	// are killed).
	proxy := ens.Proxy(t)
	logs := &historyLog{}
	const timeout = 3 * time.Second
	proxied := open(t, proxy.Servers(), connection.WithSessionTimeout(timeout), connection.WithLogger(slog.New(logs)))
	direct := open(t, ens.Servers(), connection.WithSessionTimeout(timeout), connection.WithLogger(slog.New(logs)))
	type view struct {
		name  string
		c     *cache.Cache
		rec   *recorder
		root  string
		depth int
	}
	var views []view
	add := func(name string, client *connection.Client, root string, depth int, opts ...cache.Option) {
		c := newCache(t, client, root, opts...)
		views = append(views, view{name, c, record(t, c), root, depth})
	}
	add("tree (proxied)", proxied, "/app", -1)
	add("depth 1 (proxied)", proxied, "/app", 1, cache.WithMaxDepth(1))
	add("node (proxied)", proxied, r.parent(0), 0, cache.WithMaxDepth(0))
	add("tree (direct)", direct, "/app", -1)
	ctx := ctxFor(t, 3*time.Minute)
	for _, v := range views {
		if _, err := v.c.Trust(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cpu0 := testkit.CPUTime()
	var reads0 []int64
	for _, v := range views {
		reads0 = append(reads0, v.c.Stats().Reads)
	}
	r.start(5 * time.Millisecond)
	defer r.finish()

	check := func(when string) {
		t.Helper()
		var bad []string
		for _, v := range views {
			if so := startOvers(v.rec); len(so) > 0 {
				bad = append(bad, fmt.Sprintf("%s started over: %d Deleted with ErrNewHistory, the first %s", v.name, len(so), so[0]))
			}
		}
		for name, cl := range map[string]*connection.Client{"proxied": proxied, "direct": direct} {
			if s := cl.Session(); s != nil && s.History() != 0 {
				bad = append(bad, fmt.Sprintf("the %s client's session %#x has History %d", name, s.ID(), s.History()))
			}
		}
		if l := logs.all(); len(l) > 0 {
			bad = append(bad, "logged: "+strings.Join(l, "\n  "))
		}
		if len(bad) > 0 {
			t.Fatalf("after %s, in one history (%d changes so far):\n%s", when, r.ops.Load(), strings.Join(bad, "\n"))
		}
	}
	pause := func(d time.Duration) { time.Sleep(d) }
	faults := []struct {
		name string
		do   func()
	}{
		{"a cut of 1 s", func() { proxy.Cut(); pause(time.Second); proxy.Restore() }},
		{"a blackhole of 1.2 s", func() { proxy.Blackhole(); pause(1200 * time.Millisecond); proxy.Restore() }},
		{"replies 400 ms late for 2 s", func() { proxy.DelayReplies(400 * time.Millisecond); pause(2 * time.Second); proxy.DelayReplies(0) }},
		{"an expiry", func() {
			if _, err := proxy.ExpireSession(); err != nil {
				t.Fatal(err)
			}
			pause(time.Second)
		}},
		{"replies dropped for 0.5 s", func() { proxy.DropReplies(); pause(500 * time.Millisecond); proxy.Restore() }},
		{"the leader killed for 2 s", func() {
			l := ens.MustLeader(t)
			if err := ens.Kill(l); err != nil {
				t.Fatal(err)
			}
			pause(2 * time.Second)
			if err := ens.Start(l); err != nil {
				t.Fatal(err)
			}
		}},
		{"a rolling restart", func() {
			for i := range 3 {
				if err := ens.Stop(i); err != nil {
					t.Fatal(err)
				}
				pause(300 * time.Millisecond)
				if err := ens.Start(i); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"a blackhole of 4.5 s (the session expires)", func() { proxy.Blackhole(); pause(4500 * time.Millisecond); proxy.Restore() }},
		{"the leader killed again", func() {
			l := ens.MustLeader(t)
			if err := ens.Kill(l); err != nil {
				t.Fatal(err)
			}
			pause(time.Second)
			if err := ens.Start(l); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, f := range faults {
		f.do()
		pause(time.Second)
		check(f.name)
	}
	r.finish()
	check("the faults, the churn stopped")
	for i, v := range views {
		if d := settledEqual(t, v.c, conn, v.root, v.depth, 30*time.Second); d != "" {
			t.Errorf("%s: not trusted and equal to the server 30 s after the churn stopped:\n%s", v.name, d)
		}
		t.Logf("%s: %d reads during the faults", v.name, v.c.Stats().Reads-reads0[i])
	}
	check("the views settled")
	t.Logf("%d changes; %v of CPU", r.ops.Load(), (testkit.CPUTime() - cpu0).Round(time.Millisecond))
}

// TestNoStartOverAcrossPartitions: the same in one history, with the
// servers cut off from one another: a follower isolated (it serves its
// clients what it has until it notices), the leader isolated (an election
// without it; its clients move), each while the tree churns.
func TestNoStartOverAcrossPartitions(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithServerPartitions())
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	r := &remaker{conn: conn, root: "/app", parents: 8, kids: 6, stop: make(chan struct{}), done: make(chan struct{}),
		rnd: rand.New(rand.NewSource(time.Now().UnixNano()))}
	r.fill(t)
	logs := &historyLog{}
	var clients []*connection.Client
	var views []*cache.Cache
	var recs []*recorder
	// One client pinned to each server, so that each partition cuts one
	// off with its server.
	for _, addr := range ens.Servers() {
		cl := open(t, []string{addr}, connection.WithSessionTimeout(3*time.Second), connection.WithLogger(slog.New(logs)))
		c := newCache(t, cl, "/app")
		clients = append(clients, cl)
		views = append(views, c)
		recs = append(recs, record(t, c))
	}
	ctx := ctxFor(t, 3*time.Minute)
	for _, c := range views {
		if _, err := c.Trust(ctx); err != nil {
			t.Fatal(err)
		}
	}
	r.start(5 * time.Millisecond)
	defer r.finish()
	isolate := func(i int) {
		t.Helper()
		if err := ens.Isolate(i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if err := ens.Heal(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
	}
	l := ens.MustLeader(t)
	isolate((l + 1) % 3)
	isolate(ens.MustLeader(t))
	r.finish()
	var bad []string
	for i, c := range views {
		if so := startOvers(recs[i]); len(so) > 0 {
			bad = append(bad, fmt.Sprintf("the view of server %d started over: %d Deleted with ErrNewHistory, the first %s", i, len(so), so[0]))
		}
		if s := clients[i].Session(); s != nil && s.History() != 0 {
			bad = append(bad, fmt.Sprintf("the client of server %d: History %d", i, s.History()))
		}
		if d := settledEqual(t, c, conn, "/app", -1, 30*time.Second); d != "" {
			bad = append(bad, fmt.Sprintf("the view of server %d: not equal to the server:\n%s", i, d))
		}
	}
	if l := logs.all(); len(l) > 0 {
		bad = append(bad, "logged: "+strings.Join(l, "\n  "))
	}
	t.Logf("%d changes", r.ops.Load())
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}
