package cache_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The scale tests are not parallel: each runs alone on the package's
// server (no other test's load in its timings, and none of its load in
// the timings of TestFaults), and they keep the server's heap low by
// deleting their trees before the next begins.

// followLarge starts a cache of root on a client of its own and waits
// until its view is trusted; the view must equal a fresh read of the
// tree, node for node. Then it makes the changes: the listener, started
// after the first view, must get exactly their events, and the view must
// equal a fresh read again.
func followLarge(t *testing.T, ens *zktest.Ensemble, conn *zk.Conn, root string, changes []change) *cache.Cache {
	t.Helper()
	client := open(t, ens.Servers())
	ctx := ctxFor(t, 5*time.Minute)
	start := time.Now()
	c := newCache(t, client, root)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	st := c.Stats()
	start = time.Now()
	truth := readAll(t, conn, root)
	t.Logf("first full view: %d nodes in %v (%.0f nodes/s), %d reads, %d watches; a fresh read of the tree took %v",
		st.Nodes, load.Round(time.Millisecond), float64(st.Nodes)/load.Seconds(), st.Reads, st.Watches, time.Since(start).Round(time.Millisecond))
	if d := diff(nodesOf(c.Snapshot()), truth); d != "" {
		t.Fatalf("first view differs from the server:\n%s", d)
	}
	rec := record(t, c)
	want := applyChanges(t, conn, changes)
	start = time.Now()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("changes of %d paths in the view %v after the last one", len(want), time.Since(start).Round(time.Millisecond))
	truth = readAll(t, conn, root)
	if d := diff(nodesOf(c.Snapshot()), truth); d != "" {
		t.Fatalf("after the changes the view differs from the server:\n%s", d)
	}
	checkChanges(t, c, rec, want, truth)
	if closed(c.Untrusted()) {
		t.Fatalf("the view is not trusted: %v", c.Err())
	}
	return c
}

// TestScaleDirectory: a directory of 10,000 children. The first view
// equals a fresh read; sets, deletes, creates and a re-creation spread
// over the directory give their events, and nothing else.
func TestScaleDirectory(t *testing.T) {
	skipScaleHeavy(t)
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	bulkTree(t, conn, treeLevels(root, 10_000))
	followLarge(t, ens, conn, root, []change{
		{"set", root},
		{"set", root + "/a0"},
		{"set", root + "/a4321"},
		{"set", root + "/a9999"},
		{"delete", root + "/a1"},
		{"delete", root + "/a5000"},
		{"delete", root + "/a9998"},
		{"recreate", root + "/a777"},
		{"create", root + "/new0"},
		{"create", root + "/new1"},
		{"create", root + "/a2/deeper"},
	})
}

// TestScaleTree: a subtree of three levels under the root, 10 × 100 ×
// 9 (10,011 nodes; 10 × 100 × 99, 100,011 nodes, when ZKRECIPES_SCALE is
// "full", as make bench runs it). The first view equals a fresh read;
// changes spread over the levels — sets, a leaf and a subtree of leaves
// deleted, a re-creation, new nodes at every depth — give their events,
// and nothing else.
func TestScaleTree(t *testing.T) {
	skipScaleHeavy(t)
	leaves := 9
	if os.Getenv("ZKRECIPES_SCALE") == "full" {
		leaves = 99
	}
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	levels := treeLevels(root, 10, 100, leaves)
	bulkTree(t, conn, levels)
	followLarge(t, ens, conn, root, []change{
		{"set", root},
		{"set", root + "/a3"},
		{"set", root + "/a3/b42"},
		{"set", root + "/a7/b9/c5"},
		{"set", fmt.Sprintf("%s/a9/b99/c%d", root, leaves-1)},
		{"delete", root + "/a1/b1/c1"},
		{"delete", root + "/a2/b5"}, // and its leaves
		{"recreate", root + "/a4/b4/c4"},
		{"create", root + "/a0/b0/c0/d0"},
		{"create", root + "/a5/new"},
		{"create", root + "/a5/new/x"},
		{"create", root + "/new"},
	})
}

// wideShape returns the size of wideDirectory's directory and the name of
// its i-th child. Its listing is longer than 1 MiB either way (the Java
// client's bound, javaMaxPacket). In make test it has 7,000 children of
// 200-byte names (1.4 MB); with ZKRECIPES_SCALE=full (make bench) 70,000
// of 16-byte names (1.4 MB too): more than 65,535, the reads in flight
// CuratorCache before 5.6.0 could count (CURATOR-690: its Phaser's bound),
// which a listing of that many children starts at once.
func wideShape() (children int, name func(i int) string) {
	if os.Getenv("ZKRECIPES_SCALE") == "full" {
		return 70_000, func(i int) string { return fmt.Sprintf("member-%09d", i) }
	}
	pad := strings.Repeat("x", 184)
	return 7_000, func(i int) string { return fmt.Sprintf("member-%09d-%s", i, pad) }
}

// javaMaxPacket is the longest answer the Java client reads unless its
// jute.maxbuffer says otherwise (ZKClientConfig's
// CLIENT_MAX_PACKET_LENGTH_DEFAULT, 1 MiB less one byte); a longer one
// drops its connection ("Packet len … is out of range").
const javaMaxPacket = 0xfffff

// wideDirectory writes, under a root of the test's own, a directory
// ("wide") of wideShape's children, whose listing is longer than the
// Java client reads by default (ZooKeeper 3.8.0 sends it: its
// jute.maxbuffer bounds what it reads, not what it answers), and a small
// subtree beside it ("other"), and returns the three paths.
func wideDirectory(t *testing.T, ens *zktest.Ensemble, conn *zk.Conn) (root, wide, other string) {
	t.Helper()
	root = ens.Root(t)
	wide, other = root+"/wide", root+"/other"
	n, name := wideShape()
	kids := make([]string, n)
	for i := range kids {
		kids[i] = wide + "/" + name(i)
	}
	bulkTree(t, conn, [][]string{{wide, other}, append(kids, other+"/x", other+"/y")})
	if _, stat, err := conn.Children(wide); err != nil || stat.NumChildren != int32(n) {
		t.Fatalf("list the directory: %v, %v", err, stat)
	}
	return root, wide, other
}

// TestScaleWideDirectory: a cache of wideDirectory's tree on a client
// that accepts any size (the default) holds the whole directory and
// follows its changes.
func TestScaleWideDirectory(t *testing.T) {
	skipScaleHeavy(t)
	ens := shared.Ensemble(t)
	conn := ens.Conn(t)
	root, wide, other := wideDirectory(t, ens, conn)
	n, name := wideShape()
	followLarge(t, ens, conn, root, []change{
		{"set", wide},
		{"set", wide + "/" + name(0)},
		{"set", wide + "/" + name(n-1)},
		{"delete", wide + "/" + name(n/2)},
		{"create", wide + "/" + name(n)},
		{"set", other + "/x"},
	})
}

// TestScaleWideDirectoryOnBoundedClient: a cache of wideDirectory's tree
// on a client bounded to the Java client's limit (WithMaxBufferSize)
// keeps the directory's node with Err wrapping
// connection.ErrResponseTooLarge and none of its children, holds the rest
// of the tree, follows its changes, and is trusted again after the one
// connection drop the answer costs.
func TestScaleWideDirectoryOnBoundedClient(t *testing.T) {
	skipScaleHeavy(t)
	// Each too-large listing drops the connection: a reconnect.
	skipReconnectsUnderRace(t)
	ens := shared.Ensemble(t)
	conn := ens.Conn(t)
	root, wide, other := wideDirectory(t, ens, conn)
	client := open(t, ens.Servers(), connection.WithMaxBufferSize(javaMaxPacket))
	ctx := ctxFor(t, 2*time.Minute)
	c := newCache(t, client, root)
	rec := record(t, c)
	start := time.Now()
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("first view in %v: %d nodes, %d reads", time.Since(start).Round(time.Millisecond), c.Stats().Nodes, c.Stats().Reads)
	checkBounded := func(when string) {
		t.Helper()
		n, ok := c.Get(wide)
		if !ok || !errors.Is(n.Err, connection.ErrResponseTooLarge) {
			t.Fatalf("%s: the directory: %v, Err %v; want Err wrapping ErrResponseTooLarge", when, ok, n.Err)
		}
		if kids, _ := c.Children(wide); len(kids) != 0 {
			t.Fatalf("%s: %d children of the directory in the view", when, len(kids))
		}
		want := readTree(t, conn, other, -1)
		for _, p := range []string{root, wide} {
			data, stat, err := conn.Get(p)
			if err != nil {
				t.Fatal(err)
			}
			want[p] = tnode{data, *stat}
		}
		if d := diff(nodesOf(c.Snapshot()), want); d != "" {
			t.Fatalf("%s: the view differs from the server:\n%s", when, d)
		}
	}
	checkBounded("first view")
	// The error is told: the directory's node in its event carries it.
	rec.waitFor(t, "the directory with its error", func(ev cache.Event) bool {
		return (ev.Type == cache.Created || ev.Type == cache.Changed) && ev.Path == wide && errors.Is(ev.Node.Err, connection.ErrResponseTooLarge)
	})

	// since returns the events from mark on, as "TYPE /path" (the
	// path under root), once the last is want's last.
	since := func(mark int, want []string) []string {
		t.Helper()
		var got []string
		zktest.Eventually(t, 30*time.Second, "events "+strings.Join(want, ", "), func() error {
			got = got[:0]
			for _, ev := range rec.all()[mark:] {
				s := ev.Type.String()
				if ev.Path != "" {
					s += " " + strings.TrimPrefix(ev.Path, root)
				}
				got = append(got, s)
			}
			if len(got) < len(want) || got[len(got)-1] != want[len(want)-1] {
				return fmt.Errorf("events %v", got)
			}
			return nil
		})
		return got
	}

	// Changes elsewhere are followed. A new child of the directory
	// is not seen (no listing, so no child watch), and costs nothing.
	mark := len(rec.all())
	reads := c.Stats().Reads
	if _, err := conn.Set(other+"/x", []byte("bounded"), -1); err != nil {
		t.Fatal(err)
	}
	n, name := wideShape()
	mustCreate(t, conn, wide+"/"+name(n+1), nil)
	mustCreate(t, conn, other+"/z", []byte("z"))
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"CHANGED /other/x", "CREATED /other/z"}
	if got := since(mark, want); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	checkBounded("after changes elsewhere")
	t.Logf("changes elsewhere: %d reads", c.Stats().Reads-reads)

	// A change of the directory's data is followed, and lists it
	// again: in vain, at the cost of one connection drop (Untrusted,
	// then Trusted).
	mark = len(rec.all())
	if _, err := conn.Set(wide, []byte("bounded"), -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{"CHANGED /wide", "UNTRUSTED", "TRUSTED"}
	if got := since(mark, want); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	evs := rec.all()
	if ev := evs[mark]; !errors.Is(ev.Node.Err, connection.ErrResponseTooLarge) || string(ev.Node.Data) != "bounded" {
		t.Fatalf("Changed %s: data %q, Err %v", ev.Path, ev.Node.Data, ev.Node.Err)
	}
	if ev := evs[mark+1]; !errors.Is(ev.Err, cache.ErrSuspended) {
		t.Fatalf("Untrusted with %v, want ErrSuspended", ev.Err)
	}
	checkBounded("after the directory changed")
	hasEveryEvent(t, rec, c, "after the directory changed")
	if bad := checkOrder(rec.all(), root); len(bad) > 0 {
		t.Fatalf("order:\n%s", strings.Join(bad, "\n"))
	}
}

// skipScaleHeavy skips a scale test when ZKRECIPES_SKIP_HEAVY is set: make
// test runs every test with -race first, then again with the oldest
// supported Go with that variable set, where a scale test (a minute and more of this package's time) would only
// repeat what the first run proved.
func skipScaleHeavy(t *testing.T) {
	t.Helper()
	if os.Getenv("ZKRECIPES_SKIP_HEAVY") != "" {
		t.Skip("a scale test: it ran in the -race pass (ZKRECIPES_SKIP_HEAVY is set)")
	}
}
