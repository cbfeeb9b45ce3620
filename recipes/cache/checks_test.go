package cache_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The checks a test makes of a cache at a pause, each failing t with the
// moment it names (when): the cache holds every change and is trusted,
// it equals the server's tree, the listener has every event in the
// server's order, and the watches counted are the server's.

// syncTrusted waits until c holds every change committed before the call
// (Sync) and trusts its view again (Trust).
func syncTrusted(t testing.TB, ctx context.Context, c *cache.Cache, when string) {
	t.Helper()
	if err := c.Sync(ctx); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if _, err := c.Trust(ctx); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
}

// equalsServer fails t unless c's view equals the server's tree at
// c.Path(), read to maxDepth (-1: all) through conn. It returns the view
// and the tree compared, for the checks that follow.
func equalsServer(t testing.TB, conn *zk.Conn, c *cache.Cache, maxDepth int, when string) (view map[string]cache.Node, want map[string]tnode) {
	t.Helper()
	want, view = readTree(t, conn, c.Path(), maxDepth), nodesOf(c.Snapshot())
	if d := diff(view, want); d != "" {
		t.Fatalf("%s: cache of %s differs from the server:\n%s", when, c.Path(), d)
	}
	return view, want
}

// settledEqualsServer is syncTrusted, then equalsServer of the whole tree.
func settledEqualsServer(t testing.TB, ctx context.Context, conn *zk.Conn, c *cache.Cache, when string) {
	t.Helper()
	syncTrusted(t, ctx, c, when)
	equalsServer(t, conn, c, -1, when)
}

// hasEveryEvent waits until rec's events, replayed, give c's view.
func hasEveryEvent(t testing.TB, rec *recorder, c *cache.Cache, when string) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, when+": the listener has every event", func() error {
		if d := diffReplay(replay(rec.all()), c.Snapshot()); d != "" {
			return errors.New(d)
		}
		return nil
	})
}

// inServerOrder fails t unless rec's events under root come in the
// server's order for each path.
func inServerOrder(t testing.TB, rec *recorder, root, when string) {
	t.Helper()
	if bad := checkOrder(rec.all(), root); len(bad) > 0 {
		t.Fatalf("%s: order:\n%s", when, strings.Join(bad[:min(20, len(bad))], "\n"))
	}
}

// watchesAreServers waits until the caches, client and server count the
// same watches (watchesAsServer) for the nodes of counted's view.
func watchesAreServers(t *testing.T, ens *zktest.Ensemble, client *connection.Client, when string, counted *cache.Cache, cs ...*cache.Cache) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, when+": watches as the server's", func() error {
		return watchesAsServer(t, ens, client, counted.Snapshot().Len(), cs...)
	})
}

// otherUser is another user of client: the data and child watches of
// each of paths, set again each time they fire, until the returned stop
// is called.
func otherUser(client *connection.Client, paths []string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	testkit.RearmWatches(ctx, &wg, client, paths)
	return func() { cancel(); wg.Wait() }
}

// writerTree is a tree under the ensemble's root that wr fills with n
// nodes, changed every rate once wr starts, with a client through a proxy
// (session timeout sessionTimeout) to cut it off.
type writerTree struct {
	ens    *zktest.Ensemble
	root   string
	conn   *zk.Conn
	wr     *writer
	proxy  *zktest.Proxy
	client *connection.Client
}

func newWriterTree(t *testing.T, ens *zktest.Ensemble, n int, rate, sessionTimeout time.Duration) *writerTree {
	t.Helper()
	w := &writerTree{ens: ens, root: ens.Root(t), conn: ens.Conn(t)}
	w.wr = newWriter(t, w.conn, w.root, n, rate)
	w.wr.fill(t)
	w.proxy = ens.Proxy(t)
	w.client = open(t, w.proxy.Servers(), connection.WithSessionTimeout(sessionTimeout))
	return w
}

// twoCaches makes two caches of the tree, b recorded, and waits until
// each has loaded it (b first).
func (w *writerTree) twoCaches(t *testing.T) (a, b *cache.Cache, rec *recorder) {
	t.Helper()
	b = newCache(t, w.client, w.root)
	rec = record(t, b)
	waitInit(t, b)
	a = newCache(t, w.client, w.root)
	waitInit(t, a)
	return a, b, rec
}

// settledChecks checks caches cs of one tree at a pause: each holds
// every change, is trusted and equals the server's tree (read through
// conn); rec has every event of recorded; the caches, client and server
// count the same watches.
func settledChecks(t *testing.T, ens *zktest.Ensemble, client *connection.Client, conn *zk.Conn, when string, rec *recorder, recorded *cache.Cache, cs ...*cache.Cache) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for _, c := range cs {
		settledEqualsServer(t, ctx, conn, c, when)
	}
	hasEveryEvent(t, rec, recorded, when)
	watchesAreServers(t, ens, client, when, recorded, cs...)
}

// pausedChecks is settledChecks with the writer paused.
func (w *writerTree) pausedChecks(t *testing.T, when string, rec *recorder, recorded *cache.Cache, cs ...*cache.Cache) {
	t.Helper()
	w.wr.pause()
	defer w.wr.resume()
	settledChecks(t, w.ens, w.client, w.conn, when, rec, recorded, cs...)
}
