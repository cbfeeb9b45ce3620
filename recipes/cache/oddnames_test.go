package cache_test

// A directory whose children are kept in a slice sorted by name and
// matched against each listing side by side: names that sort oddly, that
// are prefixes of each other, that are numbers of different lengths,
// deleted and made again (a new czxid) while caches load them in bulk and
// while readers call Get, Children and Snapshot.

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// oddNames are child names whose byte order differs from what a reader
// might expect: prefixes, punctuation below and above digits and letters,
// upper before lower case, multi-byte UTF-8, sequential suffixes of 10
// and 11 digits.
var oddNames = []string{
	"a", "a-", "a0", "a-b", "a.", "a..", "a-0", "a00", "ab", "A", "Z", "_", "~", " ", "a b",
	"é", "e\u0301", "ÿ", "Ā", "日本", "日", "\uf900", "\u00a0", "z\u00e9",
	"x-0000000009", "x-0000000010", "x-9999999999", "x-10000000000", "x-00000000001",
	"1", "10", "100", "2", "09",
}

// oddChurn deletes and makes again, sets, and adds and removes children of
// the odd names under dir, at random, until stop is closed.
func oddChurn(t *testing.T, conn *zk.Conn, dir string, names []string, stop <-chan struct{}, ops *atomic.Int64) error {
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	acl := zk.WorldACL(zk.PermAll)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		name := names[rng.Intn(len(names))]
		p := dir + "/" + name
		var err error
		switch rng.Intn(5) {
		case 0: // remade at once, with a child
			_, err = conn.Multi(
				&zk.DeleteRequest{Path: p + "/c/d", Version: -1},
				&zk.DeleteRequest{Path: p + "/c", Version: -1},
				&zk.DeleteRequest{Path: p, Version: -1},
				&zk.CreateRequest{Path: p, Data: []byte(fmt.Sprint("m", ops.Load())), Acl: acl},
				&zk.CreateRequest{Path: p + "/c", Data: []byte("c"), Acl: acl},
				&zk.CreateRequest{Path: p + "/c/d", Data: []byte("d"), Acl: acl},
			)
		case 1: // gone
			_, err = conn.Multi(
				&zk.DeleteRequest{Path: p + "/c/d", Version: -1},
				&zk.DeleteRequest{Path: p + "/c", Version: -1},
				&zk.DeleteRequest{Path: p, Version: -1},
			)
		case 2: // made
			_, err = conn.Multi(
				&zk.CreateRequest{Path: p, Data: []byte(name), Acl: acl},
				&zk.CreateRequest{Path: p + "/c", Data: []byte("c"), Acl: acl},
				&zk.CreateRequest{Path: p + "/c/d", Data: []byte("d"), Acl: acl},
			)
		default:
			_, err = conn.Set(p, []byte(fmt.Sprint("s", ops.Load())), -1)
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("%s: %w", p, err)
		}
		ops.Add(1)
	}
}

// TestOddNamesChurnWhileLoading: caches start one after another (each
// loading the directory and its children's children in bulk) while the
// odd-named children are remade, deleted, made and set as fast as a
// session can; readers call Get, Children and Snapshot all the while and
// check that a directory's names are sorted, unique and each held. At
// each pause every cache equals the server's tree, its events replay to
// it in the server's order.
func TestOddNamesChurnWhileLoading(t *testing.T) {
	t.Parallel()
	oddNamesChurn(t, oddNames, -1, cache.Selector{})
}

// TestWideDirectoryChurnWhileLoading: TestOddNamesChurnWhileLoading with
// 700 children (several reads in bulk of up to 256 nodes each): decimal
// names of 1 to 3 digits ("1" < "10" < "100" < "11" < "2"), names that are
// prefixes of each other ("p", "p-", "p--", "p-0"), and the odd names.
func TestWideDirectoryChurnWhileLoading(t *testing.T) {
	t.Parallel()
	names := slices.Clone(oddNames)
	for i := range 600 {
		names = append(names, fmt.Sprint(i))
	}
	for i := range 60 {
		names = append(names, "p"+strings.Repeat("-", i%7)+strings.Repeat("0", i/7))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	oddNamesChurn(t, names, -1, cache.Selector{})
}

// TestOddNamesChurnShapes: TestOddNamesChurnWhileLoading with the
// cache's shape bounded: the directory (WithMaxDepth(1)), two levels,
// and a Selector that leaves out the names starting with "a" and does
// not descend into those ending in "0"; each compared with the server's
// tree of that shape.
func TestOddNamesChurnShapes(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	sel := cache.Selector{
		Accept:  func(p string) bool { _, name := splitPath(p); return !strings.HasPrefix(name, "a") },
		Descend: func(p string) bool { return !strings.HasSuffix(p, "0") },
	}
	for _, tc := range []struct {
		name  string
		depth int
		sel   cache.Selector
	}{
		{"directory", 1, cache.Selector{}},
		{"two levels", 2, cache.Selector{}},
		{"selector", -1, sel},
		{"selector two levels", 2, sel},
	} {
		t.Run(tc.name, func(t *testing.T) { oddNamesChurn(t, oddNames, tc.depth, tc.sel) })
	}
}

func oddNamesChurn(t *testing.T, names []string, depth int, sel cache.Selector) {
	var opts []cache.Option
	if depth >= 0 {
		opts = append(opts, cache.WithMaxDepth(depth))
	}
	if sel.Accept != nil || sel.Descend != nil {
		opts = append(opts, cache.WithSelector(sel))
	}
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	for _, n := range names {
		mustCreate(t, conn, root+"/"+n, []byte(n))
		mustCreate(t, conn, root+"/"+n+"/c", []byte("c"))
		mustCreate(t, conn, root+"/"+n+"/c/d", []byte("d"))
	}
	client := open(t, ens.Servers())
	var ops atomic.Int64
	for round := range 4 {
		stop := make(chan struct{})
		errc := make(chan error, 4)
		for range 4 {
			go func() { errc <- oddChurn(t, conn, root, names, stop, &ops) }()
		}
		c := newCache(t, client, root, opts...)
		rec := record(t, c)
		var rd sync.WaitGroup
		var bad atomic.Value
		rdStop := make(chan struct{})
		for range 2 {
			rd.Add(1)
			go func() {
				defer rd.Done()
				for {
					select {
					case <-rdStop:
						return
					default:
					}
					if err := checkReads(c, root); err != nil {
						bad.CompareAndSwap(nil, err)
						return
					}
				}
			}()
		}
		waitInit(t, c)
		time.Sleep(time.Duration(300+round*200) * time.Millisecond)
		close(stop)
		for range 4 {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		close(rdStop)
		rd.Wait()
		if err, _ := bad.Load().(error); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := c.Sync(ctxFor(t, time.Minute)); err != nil {
			t.Fatal(err)
		}
		want := selectTree(readTree(t, conn, root, depth), root, sel)
		if d := diff(nodesOf(c.Snapshot()), want); d != "" {
			t.Fatalf("round %d: the view differs from the server:\n%s", round, d)
		}
		if err := checkReads(c, root); err != nil {
			t.Fatalf("round %d at rest: %v", round, err)
		}
		zktest.Eventually(t, 10*time.Second, "the listener has every event", func() error {
			if d := diff(replay(rec.all()), want); d != "" {
				return errors.New(d)
			}
			return nil
		})
		if bad := checkOrder(rec.all(), root); len(bad) > 0 {
			t.Fatalf("round %d: order:\n%v", round, bad[:min(20, len(bad))])
		}
		t.Logf("round %d: %d nodes, %d ops so far, %d events", round, c.Snapshot().Len(), ops.Load(), len(rec.all()))
		c.Close()
	}
}

// checkReads reads the cache as a user does, concurrently with its
// worker: the directory's names sorted and unique, each one's Get held
// or gone since (never a name held and its node with another path); a
// Snapshot's Children the same rule, and every name of it held in it.
func checkReads(c *cache.Cache, root string) error {
	names, ok := c.Children(root)
	if !ok {
		return nil
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		return fmt.Errorf("Children(%s) not sorted and unique: %q", root, names)
	}
	for _, n := range names {
		if nd, ok := c.Get(root + "/" + n); ok && nd.Path != root+"/"+n {
			return fmt.Errorf("Get(%s) gave %s", root+"/"+n, nd.Path)
		}
	}
	snap := c.Snapshot()
	sn, ok := snap.Children(root)
	if !ok {
		return nil
	}
	if !slices.IsSorted(sn) {
		return fmt.Errorf("Snapshot.Children(%s) not sorted: %q", root, sn)
	}
	for _, n := range sn {
		nd, ok := snap.Get(root + "/" + n)
		if !ok || nd.Path != root+"/"+n {
			return fmt.Errorf("snapshot lists %s but holds %v %v", n, nd.Path, ok)
		}
		kids, ok := snap.Children(root + "/" + n)
		if !ok {
			return fmt.Errorf("snapshot lists %s but has no Children of it", n)
		}
		for _, k := range kids {
			if _, ok := snap.Get(root + "/" + n + "/" + k); !ok {
				return fmt.Errorf("snapshot lists %s/%s but holds no such node", n, k)
			}
		}
	}
	st := c.Stats()
	if st.Nodes < 0 {
		return fmt.Errorf("Stats: %+v", st)
	}
	return nil
}

// selectTree leaves out of tree what sel does not cache under root: a
// child not accepted with everything under it, the children of a node not
// descended into.
func selectTree(tree map[string]tnode, root string, sel cache.Selector) map[string]tnode {
	out := map[string]tnode{}
	for p, n := range tree {
		ok := true
		for q := p; q != root && ok; {
			parent, _ := splitPath(q)
			ok = (sel.Accept == nil || sel.Accept(q)) && (sel.Descend == nil || sel.Descend(parent))
			q = parent
		}
		if ok {
			out[p] = n
		}
	}
	return out
}
