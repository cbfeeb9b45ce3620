package cache_test

// Caches sharing one client: their bulk reads' watches are entries of the
// client's sink table, and two caches (or a cache and another user's
// GetWatch/ChildrenWatch) share a node's server watch. One firing must
// tell every watcher; a cache closed with reads in flight must leave the
// others whole.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// twoWriters fills root/a (n nodes) and root/b (n/2) with a writer each,
// on one session: a cache of root and one of root/b overlap where the
// second writer writes.
func twoWriters(t *testing.T, conn *zk.Conn, root string, n int, rate time.Duration) (wrs []*writer, branch string) {
	t.Helper()
	branch = root + "/b"
	for i, p := range []string{root + "/a", branch} {
		mustCreate(t, conn, p, nil)
		wr := newWriter(t, conn, p, n/(i+1), rate)
		wr.fill(t)
		wrs = append(wrs, wr)
	}
	return wrs, branch
}

// overlapping is twoWriters' tree (the writers not started) and a client
// of it through a proxy.
type overlapping struct {
	root, branch string
	conn         *zk.Conn
	wrs          []*writer
	proxy        *zktest.Proxy
	client       *connection.Client
}

func newOverlapping(t *testing.T, ens *zktest.Ensemble, n int, rate, sessionTimeout time.Duration) *overlapping {
	t.Helper()
	o := &overlapping{root: ens.Root(t), conn: ens.Conn(t)}
	o.wrs, o.branch = twoWriters(t, o.conn, o.root, n, rate)
	o.proxy = ens.Proxy(t)
	o.client = open(t, o.proxy.Servers(), connection.WithSessionTimeout(sessionTimeout))
	return o
}

// cachesOfBoth makes a cache of the root and one of the branch, each
// recorded.
func (o *overlapping) cachesOfBoth(t *testing.T) (all, br *cache.Cache, cs []*cache.Cache, recs []*recorder) {
	t.Helper()
	all = newCache(t, o.client, o.root)
	br = newCache(t, o.client, o.branch)
	return all, br, []*cache.Cache{all, br}, []*recorder{record(t, all), record(t, br)}
}

func startWriters(wrs []*writer) {
	for _, wr := range wrs {
		wr.start()
	}
}

func finishWriters(t *testing.T, wrs []*writer) {
	for _, wr := range wrs {
		wr.finish(t)
	}
}

// settleMany is settleAgainst for several caches of the writers' trees
// (writers of one session), each of its own root and depth. With no
// writers, the caller paused them and gives their session.
func settleMany(t *testing.T, wrs []*writer, when string, cs []*cache.Cache, recs []*recorder, depths []int, paused ...*zk.Conn) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for _, wr := range wrs {
		wr.pause()
		defer wr.resume()
	}
	var conn *zk.Conn
	if len(wrs) > 0 {
		conn = wrs[0].conn
	} else {
		conn = paused[0]
	}
	for i, c := range cs {
		when := fmt.Sprintf("%s: cache %d", when, i)
		syncTrusted(t, ctx, c, when)
		equalsServer(t, conn, c, depths[i], when)
		hasEveryEvent(t, recs[i], c, when)
		inServerOrder(t, recs[i], c.Path(), when)
	}
	// No read loop: nothing changes, nothing is read.
	reads := make([]int64, len(cs))
	for i, c := range cs {
		reads[i] = c.Stats().Reads
	}
	time.Sleep(300 * time.Millisecond)
	for i, c := range cs {
		if n := c.Stats().Reads - reads[i]; n != 0 {
			t.Fatalf("%s: cache %d of %s read %d times in 300 ms of a still tree", when, i, c.Path(), n)
		}
	}
}

// TestCachesSharingAClient: on one client, a cache of the whole tree, a
// cache of one of its branches, a cache of that branch's directory, and
// another user's data and child watches re-armed on the branch's nodes;
// a fourth cache is closed while its first load's bulk reads are in
// flight, round after round, and the connection is cut now and then
// (same session). A writer changes the tree throughout. At each pause the
// three caches equal the server's tree (each to its depth), their events
// replay to it in the server's order.
func TestCachesSharingAClient(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	o := newOverlapping(t, ens, 1000, 2*time.Millisecond, 8*time.Second)
	root, conn, branch, proxy, client := o.root, o.conn, o.branch, o.proxy, o.client
	wrs := o.wrs
	sub, _, err := conn.Children(branch)
	if err != nil {
		t.Fatal(err)
	}
	watched := []string{branch}
	for _, k := range sub[:min(len(sub), 20)] {
		watched = append(watched, branch+"/"+k)
	}
	startWriters(wrs)
	defer finishWriters(t, wrs)
	sess := client.Session()
	defer otherUser(client, watched)()
	all := newCache(t, client, root)
	br := newCache(t, client, branch)
	dir := newCache(t, client, branch, cache.WithMaxDepth(1))
	cs := []*cache.Cache{all, br, dir}
	recs := []*recorder{record(t, all), record(t, br), record(t, dir)}
	depths := []int{-1, -1, 1}
	for round := range 6 {
		extra := newCache(t, client, root)
		time.Sleep(time.Duration(round*7) * time.Millisecond)
		if round%2 == 1 {
			proxy.Cut()
			time.Sleep(50 * time.Millisecond)
			proxy.Restore()
		}
		extra.Close()
		for _, c := range cs {
			waitInit(t, c)
		}
		time.Sleep(150 * time.Millisecond)
		settleMany(t, wrs, fmt.Sprintf("round %d", round), cs, recs, depths)
	}
	if client.Session() != sess {
		t.Fatal("a new session")
	}
	t.Logf("%d nodes; reads %d/%d/%d", all.Snapshot().Len(), all.Stats().Reads, br.Stats().Reads, dir.Stats().Reads)
}

// TestCachesSharingAClientExpiry: the same caches (and the other user's
// watches) on one client whose session expires, once during the first
// load and once in the middle of a reconnect's re-registration (cut off
// again right after the link is restored): every cache rebuilds in the
// new session and equals the server's tree, and once settled reads
// nothing more, the tree still (the risk of a second expiry is explained
// at TestTrustedAfterExpiryDuringReRegistration).
func TestCachesSharingAClientExpiry(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	o := newOverlapping(t, ens, 1000, 3*time.Millisecond, 2*time.Second)
	root, branch, proxy, client := o.root, o.branch, o.proxy, o.client
	wrs := o.wrs
	startWriters(wrs)
	defer finishWriters(t, wrs)
	defer otherUser(client, []string{root, branch})()
	sess := client.Session()
	_, _, cs, recs := o.cachesOfBoth(t)
	depths := []int{-1, -1}
	time.Sleep(15 * time.Millisecond)
	proxy.Blackhole()
	<-sess.Done()
	proxy.Restore()
	for _, c := range cs {
		waitInit(t, c)
	}
	settleMany(t, wrs, "expired during the load", cs, recs, depths)
	// A short cut: the same session reconnects and re-registers the
	// watches; the link is lost again for good while it does.
	sess = client.Session()
	proxy.Cut()
	time.Sleep(100 * time.Millisecond)
	proxy.Restore()
	time.Sleep(5 * time.Millisecond)
	proxy.Blackhole()
	<-sess.Done()
	proxy.Restore()
	time.Sleep(200 * time.Millisecond)
	settleMany(t, wrs, "expired during the re-registration", cs, recs, depths)
}

// TestCachesSharingAClientAnswersLost: answers lost (requests applied,
// their answers and the watch events dropped, then the connection closed)
// at moments spread over a cache's first load in bulk and over the
// re-registration of a reconnect, on a client two other caches and
// another user's watches share; the session survives. At each pause the
// caches equal the server's tree.
func TestCachesSharingAClientAnswersLost(t *testing.T) {
	testkit.SkipHeavy(t)
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	o := newOverlapping(t, ens, 1000, 2*time.Millisecond, 10*time.Second)
	root, branch, proxy, client := o.root, o.branch, o.proxy, o.client
	wrs := o.wrs
	startWriters(wrs)
	defer finishWriters(t, wrs)
	sess := client.Session()
	defer otherUser(client, []string{root, branch})()
	all := newCache(t, client, root)
	dir := newCache(t, client, branch, cache.WithMaxDepth(1))
	waitInit(t, all)
	for round := range 8 {
		fresh := newCache(t, client, root)
		cs := []*cache.Cache{all, dir, fresh}
		recs := []*recorder{record(t, all), record(t, dir), record(t, fresh)}
		if round%2 == 1 {
			// During the re-registration of a reconnect.
			proxy.Cut()
			time.Sleep(30 * time.Millisecond)
			proxy.Restore()
		}
		time.Sleep(time.Duration(round/2*10) * time.Millisecond)
		proxy.DropReplies()
		time.Sleep(100 * time.Millisecond)
		proxy.Restore()
		waitInit(t, fresh)
		time.Sleep(100 * time.Millisecond)
		settleMany(t, wrs, fmt.Sprintf("round %d", round), cs, recs, []int{-1, 1, -1})
		fresh.Close()
	}
	if client.Session() != sess {
		t.Fatal("a new session")
	}
}

// TestCachesSharingAClientReconnectReads: two caches of overlapping trees
// on one client, loaded in bulk (every watch a sink's), and another
// user's watches on the same nodes; the connection is cut, a few nodes
// change meanwhile (half of them in both trees), and the same session comes back: each cache finds
// the changes with a few reads, not a read of its tree.
func TestCachesSharingAClientReconnectReads(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	o := newOverlapping(t, ens, 1000, time.Millisecond, 10*time.Second)
	root, branch, proxy, client := o.root, o.branch, o.proxy, o.client
	wrs := o.wrs
	sess := client.Session()
	defer otherUser(client, []string{root, branch})()
	all, br, cs, recs := o.cachesOfBoth(t)
	for _, c := range cs {
		waitInit(t, c)
	}
	settleMany(t, wrs, "loaded", cs, recs, []int{-1, -1})
	for round := range 3 {
		before := []int64{all.Stats().Reads, br.Stats().Reads}
		proxy.Cut()
		for _, wr := range wrs {
			for range 3 {
				if err := wr.step(); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
		proxy.Restore()
		settleMany(t, wrs, fmt.Sprintf("round %d", round), cs, recs, []int{-1, -1})
		for i, c := range cs {
			reads := c.Stats().Reads - before[i]
			t.Logf("round %d: cache %d: %d reads after 6 writes (%d nodes)", round, i, reads, c.Snapshot().Len())
			if reads > 40 {
				t.Errorf("round %d: cache %d of %s: %d reads for 6 writes", round, i, c.Path(), reads)
			}
		}
	}
	if client.Session() != sess {
		t.Fatal("a new session")
	}
}

// TestCachesSharingAClientTrustedAfterCut: two caches of overlapping
// trees on one client, and another user's watches on their nodes; the
// connection is cut, a tenth of the nodes are set, and the link comes
// back slow (a round trip of 200 ms). When each cache reports Trusted,
// its events so far replay to the server's tree, which nothing changed
// after the cut.
func TestCachesSharingAClientTrustedAfterCut(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	o := newOverlapping(t, ens, 1000, time.Millisecond, 6*time.Second)
	root, conn, branch, proxy, client := o.root, o.conn, o.branch, o.proxy, o.client
	defer otherUser(client, []string{root, branch})()
	all, _, cs, recs := o.cachesOfBoth(t)
	for round := range 3 {
		var dones []<-chan struct{}
		var marks []int
		for i, c := range cs {
			done, err := c.Trust(ctxFor(t, time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			dones = append(dones, done)
			marks = append(marks, len(recs[i].all()))
		}
		sid := client.Session().ID()
		proxy.Cut()
		for _, done := range dones {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("still trusted 10 s after the cut")
			}
		}
		paths := all.Snapshot().Paths()
		for i := round; i < len(paths); i += 10 {
			if _, err := conn.Set(paths[i], []byte(fmt.Sprint("cut ", round)), -1); err != nil {
				t.Fatal(err)
			}
		}
		proxy.Delay(100 * time.Millisecond)
		for i, c := range cs {
			want := readTree(t, conn, c.Path(), -1)
			u := waitFrom(t, recs[i], marks[i], "Untrusted at the cut", func(ev cache.Event) bool { return ev.Type == cache.Untrusted })
			k := waitFrom(t, recs[i], u, "Trusted after the cut", func(ev cache.Event) bool { return ev.Type == cache.Trusted })
			if client.Session().ID() != sid {
				t.Skip("a new session: not the case under test")
			}
			if d := diff(replay(recs[i].all()[:k+1]), want); d != "" {
				t.Fatalf("round %d: cache of %s Trusted while lacking changes made during the cut:\n%s", round, c.Path(), d)
			}
		}
		proxy.Restore()
	}
}

// TestTrustedAfterExpiryDuringReRegistration: two caches of overlapping
// trees on one client; a short cut, the same session back, and 5 ms
// later the link lost until the session expires — while the watches were
// being registered again. Meanwhile nodes are set, children made under
// existing nodes and leaves deleted. When each cache reports Trusted in
// the new session, its events so far replay to the server's tree (which
// nothing changed since), and it reads nothing more: no second read of
// every node after Trusted, which would leave the view right but double
// the cost of the rebuild (TestCachesSharingAClientExpiry is the same
// case).
//
// The old go-zookeeper handle is closed in the background
// (Client.replaceHandleLocked: old.Close(), up to a second, then
// endWatches), so its sink watches end (EventNotWatching) after the new
// session's bulk reads have set the cache's sink watches again. The sink
// tells the cache the path only, not which handle's watch ended; so
// sinkFired takes an EventNotWatching for news of a session's end only
// (checkSession; lost marks every op if it is the view's session), never
// for the op's pending sink watch (o.own, set in the new session), which
// would mark every node for a check. In the plain expiry
// (TestTrustedAfterExpiry) the old handle's watches end before the new
// session's reads.
func TestTrustedAfterExpiryDuringReRegistration(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	trustedAfterExpiry(t, true)
}

// TestTrustedAfterExpiry: TestTrustedAfterExpiryDuringReRegistration
// with the link lost at once, no short cut before.
func TestTrustedAfterExpiry(t *testing.T) {
	skipReconnectsUnderRace(t)
	t.Parallel()
	trustedAfterExpiry(t, false)
}

func trustedAfterExpiry(t *testing.T, reRegistration bool) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	o := newOverlapping(t, ens, 1000, time.Millisecond, 2*time.Second)
	root, conn, branch, proxy, client := o.root, o.conn, o.branch, o.proxy, o.client
	all, _, cs, recs := o.cachesOfBoth(t)
	var marks []int
	for i, c := range cs {
		if _, err := c.Trust(ctxFor(t, time.Minute)); err != nil {
			t.Fatal(err)
		}
		marks = append(marks, len(recs[i].all()))
	}
	sess := client.Session()
	if reRegistration {
		proxy.Cut()
		time.Sleep(100 * time.Millisecond)
		proxy.Restore()
		time.Sleep(5 * time.Millisecond)
	}
	proxy.Blackhole()
	paths := all.Snapshot().Paths()
	made, gone, set := 0, 0, 0
	for i, p := range paths {
		if p == root || p == branch || p == root+"/a" {
			continue
		}
		switch i % 30 {
		case 1:
			if _, err := conn.Create(p+"/new", []byte("new"), 0, zk.WorldACL(zk.PermAll)); err == nil {
				made++
			}
		case 2:
			if err := conn.Delete(p, -1); err == nil {
				gone++
			}
		case 3:
			if _, err := conn.Set(p, []byte("set"), -1); err == nil {
				set++
			}
		}
	}
	<-sess.Done()
	proxy.Restore()
	for i, c := range cs {
		want := readTree(t, conn, c.Path(), -1)
		if _, err := c.Trust(ctxFor(t, time.Minute)); err != nil {
			t.Fatal(err)
		}
		reads := c.Stats().Reads
		if client.Session() == sess {
			t.Fatal("the same session")
		}
		// The Trusted of the new session: the last one, once the
		// listener has it (a Trusted may have come in the 5 ms the
		// same session was back).
		k := -1
		zktest.Eventually(t, 10*time.Second, "the listener has the Trusted", func() error {
			evs := recs[i].all()
			for j := len(evs) - 1; j >= marks[i]; j-- {
				if evs[j].Type == cache.Untrusted {
					return errors.New("no Trusted after the last Untrusted yet")
				}
				if evs[j].Type == cache.Trusted {
					k = j
					return nil
				}
			}
			return errors.New("no Trusted yet")
		})
		var trust []string
		for _, ev := range recs[i].all()[marks[i] : k+1] {
			if ev.Type == cache.Trusted || ev.Type == cache.Untrusted {
				trust = append(trust, ev.Type.String())
			}
		}
		t.Logf("cache of %s: %v", c.Path(), trust)
		if d := diff(replay(recs[i].all()[:k+1]), want); d != "" {
			t.Errorf("cache of %s Trusted in the new session while lacking changes of the outage (%d made, %d gone, %d set):\n%s", c.Path(), made, gone, set, d)
		}
		time.Sleep(time.Second)
		if n := c.Stats().Reads - reads; n > 0 {
			t.Errorf("cache of %s: %d reads after Trusted in the new session, the tree still", c.Path(), n)
		}
	}
}
