package cache_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Helpers of the scale tests: trees of 10^4 to 10^5 nodes written, read
// back and deleted with pipelined requests (go-zookeeper sends the
// requests of concurrent callers on one connection back to back), so that
// the tests spend their time in the cache, not in building.

// bulkWorkers is how many requests the helpers keep in flight.
const bulkWorkers = 64

// bulkBatch is how many creates or deletes go in one multi.
const bulkBatch = 200

// each calls f(i) for every i in [0, n) from up to workers goroutines,
// and returns the first error (the calls not started yet are skipped).
func each(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// batches calls f with the slices of up to size items of items, several
// at once.
func batches(items []string, size int, f func([]string) error) error {
	n := (len(items) + size - 1) / size
	return each(n, bulkWorkers, func(i int) error {
		return f(items[i*size : min(len(items), (i+1)*size)])
	})
}

// createLevels creates the nodes of levels, each level's parents being in
// an earlier level (or existing), with its path as data; multis of
// bulkBatch creates, several in flight.
func createLevels(t testing.TB, conn *zk.Conn, levels [][]string) {
	t.Helper()
	for _, level := range levels {
		err := batches(level, bulkBatch, func(ps []string) error {
			reqs := make([]any, len(ps))
			for i, p := range ps {
				reqs[i] = &zk.CreateRequest{Path: p, Data: []byte(p), Acl: zk.WorldACL(zk.PermAll)}
			}
			_, err := conn.Multi(reqs...)
			return err
		})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
	}
}

// deleteLevels deletes the nodes of levels, the last level first.
func deleteLevels(conn *zk.Conn, levels [][]string) error {
	for i := len(levels) - 1; i >= 0; i-- {
		err := batches(levels[i], bulkBatch, func(ps []string) error {
			reqs := make([]any, len(ps))
			for i, p := range ps {
				reqs[i] = &zk.DeleteRequest{Path: p, Version: -1}
			}
			if _, err := conn.Multi(reqs...); err == nil {
				return nil
			}
			// The test changed some: one by one, with what is under each.
			for _, p := range ps {
				if err := deleteTree(conn, p); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteTree deletes p and everything under it.
func deleteTree(conn *zk.Conn, p string) error {
	kids, _, err := conn.Children(p)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := deleteTree(conn, p+"/"+k); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return conn.Delete(p, -1)
}

// bulkTree writes levels under a test root and deletes them, quickly, when
// the test ends: before the root's own cleanup (which deletes one node at
// a time) and after the clients registered later are closed (their
// watches would fire for every node).
func bulkTree(t testing.TB, conn *zk.Conn, levels [][]string) {
	t.Helper()
	start := time.Now()
	createLevels(t, conn, levels)
	n := 0
	for _, l := range levels {
		n += len(l)
	}
	t.Logf("%d nodes written in %v", n, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		start := time.Now()
		if err := deleteLevels(conn, levels); err != nil {
			t.Logf("delete the tree: %v", err)
		}
		t.Logf("%d nodes deleted in %v", n, time.Since(start).Round(time.Millisecond))
	})
}

// treeLevels returns the paths of a tree under root, by depth: fan[0]
// children of root, fan[1] children of each of those, and so on; the
// names are a letter per level and a number.
func treeLevels(root string, fan ...int) [][]string {
	var levels [][]string
	parents := []string{root}
	for d, f := range fan {
		var level []string
		for _, p := range parents {
			for i := range f {
				level = append(level, fmt.Sprintf("%s/%c%d", p, 'a'+d, i))
			}
		}
		levels = append(levels, level)
		parents = level
	}
	return levels
}

// readAll reads the subtree at root as readTree does, with pipelined
// requests: a get of every node, and a listing of those whose Stat says
// they have children.
func readAll(t testing.TB, conn *zk.Conn, root string) map[string]tnode {
	t.Helper()
	var mu sync.Mutex
	out := map[string]tnode{}
	level := []string{root}
	for len(level) > 0 {
		var parents []string
		err := each(len(level), bulkWorkers, func(i int) error {
			p := level[i]
			data, stat, err := conn.Get(p)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			mu.Lock()
			defer mu.Unlock()
			out[p] = tnode{data, *stat}
			if stat.NumChildren > 0 {
				parents = append(parents, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var next []string
		err = each(len(parents), bulkWorkers, func(i int) error {
			p := parents[i]
			kids, _, err := conn.Children(p)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", p, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range kids {
				next = append(next, p+"/"+k)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		level = next
	}
	return out
}

// change is one write of the scale tests' change sets.
type change struct {
	op   string // "set", "create", "delete" (the node and its subtree), "recreate" (a leaf deleted and created again in one multi)
	path string
}

// applyChanges makes the changes, in order, and returns the node events
// they must give, by path, in order.
func applyChanges(t testing.TB, conn *zk.Conn, changes []change) map[string][]cache.EventType {
	t.Helper()
	want := map[string][]cache.EventType{}
	for _, ch := range changes {
		p := ch.path
		switch ch.op {
		case "set":
			if _, err := conn.Set(p, []byte("changed "+p), -1); err != nil {
				t.Fatalf("set %s: %v", p, err)
			}
			want[p] = append(want[p], cache.Changed)
		case "create":
			mustCreate(t, conn, p, []byte("new "+p))
			want[p] = append(want[p], cache.Created)
		case "recreate":
			if _, err := conn.Multi(&zk.DeleteRequest{Path: p, Version: -1},
				&zk.CreateRequest{Path: p, Data: []byte("again " + p), Acl: zk.WorldACL(zk.PermAll)}); err != nil {
				t.Fatalf("recreate %s: %v", p, err)
			}
			want[p] = append(want[p], cache.Deleted, cache.Created)
		case "delete":
			sub := readTree(t, conn, p, -1)
			paths := make([]string, 0, len(sub))
			for q := range sub {
				paths = append(paths, q)
			}
			// Children first: longer paths of a subtree sort after
			// their parents'.
			slices.SortFunc(paths, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
			reqs := make([]any, len(paths))
			for i, q := range paths {
				reqs[i] = &zk.DeleteRequest{Path: q, Version: -1}
				want[q] = append(want[q], cache.Deleted)
			}
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatalf("delete %s: %v", p, err)
			}
		default:
			t.Fatalf("unknown change %q", ch.op)
		}
	}
	return want
}

// checkChanges checks the events a listener got after the changes: per
// path exactly the node events want says, in that order, and no event of
// trust (the view stayed trusted); the events replayed onto the
// listener's Resync give the view.
func checkChanges(t testing.TB, c *cache.Cache, rec *recorder, want map[string][]cache.EventType, truth map[string]tnode) {
	t.Helper()
	zktest.Eventually(t, 30*time.Second, "the listener has every event", func() error {
		if d := diffReplay(replay(rec.all()), c.Snapshot()); d != "" {
			return errors.New(d)
		}
		return nil
	})
	evs := rec.all()
	got := map[string][]cache.EventType{}
	var bad []string
	for _, ev := range evs[1:] { // after the Resync
		switch ev.Type {
		case cache.Created, cache.Changed, cache.Deleted:
			got[ev.Path] = append(got[ev.Path], ev.Type)
			if tn, ok := truth[ev.Path]; ok && ev.Type == cache.Changed && ev.Node.Stat.Version != tn.stat.Version {
				bad = append(bad, fmt.Sprintf("Changed %s to version %d, the server has %d", ev.Path, ev.Node.Stat.Version, tn.stat.Version))
			}
		default:
			bad = append(bad, ev.Type.String())
		}
	}
	for p, w := range want {
		if !slices.Equal(got[p], w) {
			bad = append(bad, fmt.Sprintf("%s: events %v, want %v", p, got[p], w))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			bad = append(bad, fmt.Sprintf("%s: events %v, want none", p, g))
		}
	}
	bad = append(bad, checkOrder(evs, c.Path())...)
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Fatalf("events after the changes:\n%s", strings.Join(bad[:min(len(bad), 30)], "\n"))
	}
}
