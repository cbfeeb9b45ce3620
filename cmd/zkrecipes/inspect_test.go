package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// inspectDoc is inspect's JSON, as a script reads it.
type inspectDoc struct {
	Path         string        `json:"path"`
	Kind         string        `json:"kind"`
	Kinds        []string      `json:"kinds"`
	Warnings     []string      `json:"warnings"`
	Notes        []string      `json:"notes"`
	Participants []participant `json:"participants"`
	Semaphore    *struct {
		Max       *int   `json:"max"`
		MaxSource string `json:"max_source"`
		Holders   int    `json:"holders"`
		Waiters   int    `json:"waiters"`
	} `json:"semaphore"`
	Queue       []queueRow  `json:"queue"`
	IdleWorkers *int        `json:"idle_workers"`
	Recipes     []recipeRow `json:"recipes"`
	Truncated   bool        `json:"truncated"`
	Error       string      `json:"error"`
	ExitCode    int         `json:"exit_code"`
	Changes     []change    `json:"changes"`
}

// inspectJSON runs inspect --json and decodes what it printed.
func inspectJSON(t *testing.T, args ...string) (int, inspectDoc, string) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"inspect", "--json"}, args...)...)
	var doc inspectDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("inspect --json %v: exit %d, not JSON (%v):\n%s%s", args, code, err, out, errOut)
	}
	return code, doc, out
}

// roles returns the participants' roles and data, in order, as
// "role:data" (the data of nodes inspect read).
func rolesOf(ps []participant) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Role + ":" + p.Data
	}
	return out
}

// open opens a client of the test's own, closed when the test ends.
func open(t *testing.T, ens *zktest.Ensemble) *connection.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// background runs f (a wait that ends with ctx) in a goroutine the test
// waits for when it ends, after cancelling ctx.
func background(t *testing.T, f func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("background wait: %v", err)
		}
	})
}

// nodes waits until dir has n children.
func nodes(t *testing.T, ens *zktest.Ensemble, dir string, n int) {
	t.Helper()
	conn := ens.Conn(t)
	zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d nodes in %s", n, dir), func() error {
		kids, _, err := conn.Children(dir)
		if err == nil && len(kids) != n {
			err = fmt.Errorf("%d nodes: %v", len(kids), kids)
		}
		return err
	})
}

func lockMutex(t *testing.T, c *connection.Client, p, data string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, p, mutex.WithData([]byte(data)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitMutex queues a waiter for the mutex at p, which holds it once it
// gets it until the test ends.
func waitMutex(t *testing.T, c *connection.Client, p, data string) {
	t.Helper()
	m, err := mutex.New(c, p, mutex.WithData([]byte(data)))
	if err != nil {
		t.Fatal(err)
	}
	background(t, func(ctx context.Context) error {
		if err := m.Lock(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return m.Unlock(context.Background())
	})
}

func TestInspectMutexTextAndAges(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	before := time.Now()
	lockMutex(t, c, root+"/job", "worker-0")
	waitMutex(t, c, root+"/job", "worker-1")
	nodes(t, ens, root+"/job", 2)
	code, out, errOut := runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/job")
	if code != 0 || !strings.Contains(out, root+"/job: mutex (or LeaderSelector): held by worker-0 (session 0x") ||
		!strings.Contains(out, ", 1 waiting") || strings.Contains(out, "warning") {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), root+"/job")
	if code != 0 || doc.Kind != "mutex" || strings.Join(rolesOf(doc.Participants), " ") != "holder:worker-0 waiter:worker-1" {
		t.Fatalf("inspect --json: exit %d\n%s", code, raw)
	}
	// Ages are numbers: milliseconds since the node was created.
	var loose struct {
		Participants []map[string]any `json:"participants"`
	}
	if err := json.Unmarshal([]byte(raw), &loose); err != nil {
		t.Fatal(err)
	}
	for _, p := range loose.Participants {
		ms, ok := p["age_ms"].(float64)
		if !ok || ms < 0 || ms > float64(time.Since(before).Milliseconds()+2000) {
			t.Fatalf("age_ms %#v, %v since the lock was taken\n%s", p["age_ms"], time.Since(before), raw)
		}
	}
}

func TestInspectReadWriteLock(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	p := root + "/rw"
	rws := make([]*rwlock.RWMutex, 3)
	for i := range rws {
		var err error
		if rws[i], err = rwlock.New(c, p, rwlock.WithData([]byte(fmt.Sprintf("rw-%d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rws[0].ReadLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// A writer waits for the reader, and a second reader for the writer.
	background(t, func(ctx context.Context) error { return rws[1].WriteLock().Lock(ctx) })
	nodes(t, ens, p, 2)
	background(t, func(ctx context.Context) error { return rws[2].ReadLock().Lock(ctx) })
	nodes(t, ens, p, 3)
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), p)
	if code != 0 || doc.Kind != "read-write-lock" || strings.Join(rolesOf(doc.Participants), " ") != "holder:rw-0 waiter:rw-1 waiter:rw-2" ||
		doc.Participants[0].Recipe != "read lock" || doc.Participants[1].Kind != "write-lock" {
		t.Fatalf("inspect --json: exit %d\n%s", code, raw)
	}
	code, out, _ := runCLI(t, "inspect", "--servers", ens.ConnectString(), p)
	if code != 0 || !strings.Contains(out, "read/write lock: held by rw-0") || !strings.Contains(out, "2 waiting") {
		t.Fatalf("inspect: exit %d\n%s", code, out)
	}
}

// TestInspectSemaphore: two leases held of two; an acquirer whose lease
// waits, and one in line behind it. The maximum is unknown, or read from
// the shared count with --count.
func TestInspectSemaphore(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	p, count := root+"/sem", root+"/sem-max"
	sems := make([]*semaphore.Semaphore, 4)
	for i := range sems {
		var err error
		if sems[i], err = semaphore.New(c, p, 2, semaphore.WithSharedCount(count), semaphore.WithData([]byte(fmt.Sprintf("s-%d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range sems[:2] {
		if _, err := s.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	background(t, func(ctx context.Context) error { _, err := sems[2].Acquire(ctx, 1); return err })
	nodes(t, ens, p+"/leases", 3)
	background(t, func(ctx context.Context) error { _, err := sems[3].Acquire(ctx, 1); return err })
	nodes(t, ens, p+"/locks", 2)

	code, out, errOut := runCLI(t, "inspect", "--servers", ens.ConnectString(), p)
	for _, want := range []string{
		p + ": semaphore: 2 lease(s) held, 2 waiting; max: unknown (set by each participant)",
		"holders:", "waiting:", "pending", "acquiring", "leases/_c_", "locks/_c_",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("inspect lacks %q: exit %d\n%s%s", want, code, out, errOut)
		}
	}
	if strings.Index(out, "holders:") > strings.Index(out, "waiting:") || strings.Count(out[:strings.Index(out, "waiting:")], "s-") != 2 {
		t.Fatalf("holders not apart from waiters:\n%s", out)
	}
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), p)
	if code != 0 || doc.Kind != "semaphore" || doc.Semaphore == nil || doc.Semaphore.Max != nil ||
		doc.Semaphore.Holders != 2 || doc.Semaphore.Waiters != 2 ||
		strings.Join(rolesOf(doc.Participants), " ") != "holder:s-0 holder:s-1 pending:s-2 acquiring:s-2 waiter:s-3" {
		t.Fatalf("inspect --json: exit %d\n%s", code, raw)
	}
	code, doc, raw = inspectJSON(t, "--servers", ens.ConnectString(), "--count", count, p)
	if code != 0 || doc.Semaphore == nil || doc.Semaphore.Max == nil || *doc.Semaphore.Max != 2 ||
		strings.Join(rolesOf(doc.Participants), " ") != "holder:s-0 holder:s-1 waiting:s-2 acquiring:s-2 waiter:s-3" {
		t.Fatalf("inspect --json --count: exit %d\n%s", code, raw)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), "--count", count, p)
	if code != 0 || !strings.Contains(out, "max: 2 (shared count "+count+")") {
		t.Fatalf("inspect --count: exit %d\n%s", code, out)
	}
}

func TestInspectLeaderLatchAndSelector(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		path, kind, recipe, leader, waiter string
		opts                               []election.Option
	}{
		{root + "/latch", "leader-latch", "leader latch", "leader", "candidate", nil},
		{root + "/selector", "mutex", "mutex or leader selector", "holder", "waiter", []election.Option{election.WithSelectorLayout()}},
	} {
		first, err := election.New(c, tc.path, "first", tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := first.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		second, err := election.New(c, tc.path, "second", tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		background(t, func(ctx context.Context) error { _, err := second.Campaign(ctx); return err })
		nodes(t, ens, tc.path, 2)
		code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), tc.path)
		if code != 0 || doc.Kind != tc.kind || doc.Participants[0].Recipe != tc.recipe ||
			strings.Join(rolesOf(doc.Participants), " ") != tc.leader+":first "+tc.waiter+":second" {
			t.Fatalf("inspect --json %s: exit %d\n%s", tc.path, code, raw)
		}
	}
	code, out, _ := runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/latch")
	if code != 0 || !strings.Contains(out, "leader latch: first (session 0x") || !strings.Contains(out, "leads, 1 other candidate(s)") {
		t.Fatalf("inspect of a latch: exit %d\n%s", code, out)
	}
}

// TestInspectShowsCandidatesPriorities: a leader latch whose leader has
// no priority and whose waiting candidate published 7 (in its node's
// name, election.WithPriority): inspect gives each candidate's priority,
// in the JSON and in a PRIORITY column of the text.
func TestInspectShowsCandidatesPriorities(t *testing.T) {
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/latch"
	c := open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := election.New(c, p, "first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := election.New(c, p, "second", election.WithPriority(7))
	if err != nil {
		t.Fatal(err)
	}
	background(t, func(ctx context.Context) error { _, err := second.Campaign(ctx); return err })
	nodes(t, ens, p, 2)
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), p)
	if code != 0 || len(doc.Participants) != 2 || doc.Participants[0].Priority != 0 || doc.Participants[1].Priority != 7 ||
		strings.Join(rolesOf(doc.Participants), " ") != "leader:first candidate:second" {
		t.Fatalf("inspect --json: exit %d\n%s", code, raw)
	}
	code, out, _ := runCLI(t, "inspect", "--servers", ens.ConnectString(), p)
	lines := strings.Split(out, "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "#") })
	priority := func(l string) string { // the column under PRIORITY
		col := strings.Index(lines[header], "PRIORITY")
		if col < 0 || len(l) <= col {
			return ""
		}
		return strings.Fields(l[col:])[0]
	}
	if code != 0 || header < 0 || len(lines) < header+3 || priority(lines[header+1]) != "0" || priority(lines[header+2]) != "7" {
		t.Fatalf("inspect: exit %d\n%s", code, out)
	}
}

func TestInspectQueue(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := queue.New(c, root+"/work", queue.WithData([]byte("worker-a")))
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range []string{"a", "b", "c"} {
		if err := q.Put(ctx, []byte(item)); err != nil {
			t.Fatal(err)
		}
	}
	it, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Release(ctx) }()
	code, out, _ := runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/work")
	if code != 0 || !strings.Contains(out, "work queue, 3 item(s), 1 taken, 0 idle worker(s) in line") || !strings.Contains(out, "worker-a") {
		t.Fatalf("inspect: exit %d\n%s", code, out)
	}
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), root+"/work")
	if code != 0 || doc.Kind != "queue" || len(doc.Queue) != 3 || doc.Queue[0].State != "taken" || doc.Queue[0].Taker != "worker-a" ||
		doc.Queue[0].Item != it.Name() || doc.Queue[1].State != "ready" || doc.IdleWorkers == nil || *doc.IdleWorkers != 0 {
		t.Fatalf("inspect --json: exit %d\n%s", code, raw)
	}
}

func TestInspectNaiveLock(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c, err := connection.Open(context.Background(), ens.Servers(), connection.WithDefaultData([]byte("naive-holder")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := naive.New(c, root+"/naive")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/naive")
	if code != 0 || !strings.Contains(out, "naive lock: held by naive-holder (session 0x") || !strings.Contains(out, "waiters are not visible") ||
		strings.Contains(out, "#claim") {
		t.Fatalf("inspect: exit %d\n%s", code, out)
	}
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), root+"/naive")
	if code != 0 || doc.Kind != "naive-lock" || len(doc.Participants) != 1 || doc.Participants[0].Role != "holder" ||
		doc.Participants[0].Token != l.Token() {
		t.Fatalf("inspect --json: exit %d\n%s", code, raw)
	}
}

// TestInspectMixedKinds: recipes of different kinds at one path, which
// do not see each other, are flagged.
func TestInspectMixedKinds(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A mutex and a read/write lock's writer both hold /mixed.
	p := root + "/mixed"
	lockMutex(t, c, p, "the-mutex")
	rw, err := rwlock.New(c, p, rwlock.WithData([]byte("the-writer")))
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.WriteLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "inspect", "--servers", ens.ConnectString(), p)
	if code != 0 || !strings.Contains(out, "warning: a mutex and a read/write lock contend at "+p+" without excluding each other") ||
		!strings.Contains(out, "held by the-mutex") || !strings.Contains(out, "held by the-writer") {
		t.Fatalf("inspect: exit %d\n%s", code, out)
	}
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), p)
	if code != 0 || doc.Kind != "mixed" || strings.Join(doc.Kinds, ",") != "mutex,read-write-lock" || len(doc.Warnings) != 1 ||
		strings.Join(rolesOf(doc.Participants), " ") != "holder:the-mutex holder:the-writer" {
		t.Fatalf("inspect --json: exit %d\n%s", code, raw)
	}

	// A LeaderLatch beside a LeaderSelector: two leaders.
	p = root + "/leader"
	for _, opts := range [][]election.Option{nil, {election.WithSelectorLayout()}} {
		e, err := election.New(c, p, "leader", opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
	}
	code, doc, raw = inspectJSON(t, "--servers", ens.ConnectString(), p)
	if code != 0 || doc.Kind != "mixed" || len(doc.Warnings) != 1 ||
		doc.Warnings[0] != "a mutex (or LeaderSelector) and a leader latch contend at "+p+" without excluding each other" {
		t.Fatalf("inspect --json of a latch and a selector: exit %d\n%s", code, raw)
	}

	// A semaphore's leases beside a mutex at the semaphore's path.
	p = root + "/sem"
	s, err := semaphore.New(c, p, 1, semaphore.WithData([]byte("lease-holder")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	lockMutex(t, c, p, "mutex-holder")
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), p)
	if code != 0 || !strings.Contains(out, "warning: a mutex and a semaphore contend at "+p) ||
		!strings.Contains(out, "semaphore: 1 lease(s) held") || !strings.Contains(out, "held by mutex-holder") {
		t.Fatalf("inspect of a semaphore beside a mutex: exit %d\n%s", code, out)
	}

	// Kazoo's nodes beside Curator's.
	p = root + "/kazoo"
	conn := ens.Conn(t)
	if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(p+"/0123456789abcdef0123456789abcdef__lock__0000000000", []byte("kazoo"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(p+"/_c_6d3f5a0e-1b2c-4d5e-8f90-123456789abc-lock-0000000001", []byte("curator"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	code, doc, raw = inspectJSON(t, "--servers", ens.ConnectString(), p)
	if code != 0 || doc.Kind != "mutex" || len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], "Curator does not see Kazoo's") ||
		strings.Join(rolesOf(doc.Participants), " ") != "holder:kazoo waiter:curator" {
		t.Fatalf("inspect --json of Kazoo and Curator nodes: exit %d\n%s", code, raw)
	}

	// A directory whose sequence counter reached its limit.
	p = root + "/worn"
	for _, name := range []string{"", "/a-lock-0000000007", "/b-lock-2147483647"} {
		if _, err := conn.Create(p+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	code, doc, raw = inspectJSON(t, "--servers", ens.ConnectString(), p)
	if code != 0 || len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], "sequence counter of "+p+" reached its limit") {
		t.Fatalf("inspect --json of an exhausted directory: exit %d\n%s", code, raw)
	}
}

// TestInspectDirectory: a directory of recipes is listed, one a line,
// down to --depth levels; and so is /.
func TestInspectDirectory(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := root + "/locks"
	lockMutex(t, c, dir+"/a", "holder-a")
	waitMutex(t, c, dir+"/a", "waiter-a")
	nodes(t, ens, dir+"/a", 2)
	rw, err := rwlock.New(c, dir+"/team/rw", rwlock.WithData([]byte("reader")))
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.ReadLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := semaphore.New(c, dir+"/sem", 3, semaphore.WithData([]byte("leaser")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(c, dir+"/q")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	lockMutex(t, c, dir+"/x/y/z/deep", "deep")
	lockMutex(t, c, root+"/top", "top-holder")

	code, out, errOut := runCLI(t, "inspect", "--servers", ens.ConnectString(), dir)
	for _, want := range []string{
		dir + ": 4 recipe(s) within 3 level(s) below",
		"PATH", "KIND", "HOLDER", "WAITERS",
		dir + "/a ", "holder-a (session 0x",
		dir + "/q ", "1 item(s), 0 taken",
		dir + "/sem ", "2 lease(s) held, max unknown",
		dir + "/team/rw ", "reader (session",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("listing lacks %q: exit %d\n%s%s", want, code, out, errOut)
		}
	}
	if strings.Contains(out, "deep") {
		t.Fatalf("listing goes below --depth 3:\n%s", out)
	}
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), "--depth", "4", dir)
	if code != 0 || doc.Kind != "directory" || len(doc.Recipes) != 5 {
		t.Fatalf("inspect --json --depth 4: exit %d\n%s", code, raw)
	}
	a := doc.Recipes[0]
	if a.Path != dir+"/a" || a.Kind != "mutex" || a.Holders != 1 || a.Waiters == nil || *a.Waiters != 1 || a.Holder != "holder-a" ||
		a.HolderAgeMS == nil || *a.HolderAgeMS < 0 || doc.Recipes[4].Path != dir+"/x/y/z/deep" || doc.Recipes[3].Holders != 1 {
		t.Fatalf("inspect --json --depth 4: rows %+v\n%s", doc.Recipes, raw)
	}

	// The root: this test's lock is 3 levels down; /zookeeper is skipped.
	code, out, errOut = runCLI(t, "inspect", "--servers", ens.ConnectString(), "/")
	if code != 0 || !strings.Contains(out, root+"/top ") || !strings.Contains(out, "top-holder") || strings.Contains(out, "/zookeeper") {
		t.Fatalf("inspect /: exit %d\n%s%s", code, out, errOut)
	}
}

func TestInspectJSONErrors(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	code, doc, raw := inspectJSON(t, "--servers", ens.ConnectString(), root+"/nothing")
	if code != 1 || doc.ExitCode != 1 || doc.Path != root+"/nothing" || !strings.Contains(doc.Error, "does not exist") {
		t.Fatalf("missing path: exit %d\n%s", code, raw)
	}
	code, doc, raw = inspectJSON(t, "--servers", ens.ConnectString(), "relative")
	if code != 2 || doc.ExitCode != 2 || !strings.Contains(doc.Error, "invalid path") {
		t.Fatalf("bad path: exit %d\n%s", code, raw)
	}
	code, doc, raw = inspectJSON(t, "--servers", ens.ConnectString())
	if code != 2 || doc.ExitCode != 2 || doc.Error == "" {
		t.Fatalf("no path: exit %d\n%s", code, raw)
	}
	code, doc, raw = inspectJSON(t, "--servers", ens.ConnectString(), "--depth", "0", root)
	if code != 2 || !strings.Contains(doc.Error, "--depth") {
		t.Fatalf("--depth 0: exit %d\n%s", code, raw)
	}
	t.Setenv("ZK_SERVERS", "")
	code, doc, raw = inspectJSON(t, root)
	if code != 2 || doc.ExitCode != 2 || !strings.Contains(doc.Error, "no ZooKeeper servers") {
		t.Fatalf("no servers: exit %d\n%s", code, raw)
	}
	if code, out, _ := runCLI(t, "inspect", "--help"); code != 0 || !strings.Contains(out, "age_ms") || !strings.Contains(out, "-watch") {
		t.Fatalf("--help: exit %d\n%s", code, out)
	}
}
