package node_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// skipUnderRace skips tests whose reconnects race inside go-zookeeper
// under the race detector (go-zookeeper/zk#35, open; see recipes/cache).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("go-zookeeper/zk#35: its reconnects race inside go-zookeeper under -race")
	}
}

// expirySession is the session timeout of the client whose session the
// expiry test ends; expiryRounds, how many expiries it measures.
const (
	expirySession = 2 * time.Second
	expiryRounds  = 5
)

// TestExpiry: the client is cut off until the server expires its session
// (the observer sees the node go), then let through. The node is present
// again in the new session: the observer sees it made, owned by the new
// session, one copy, with the newest data. Each round measures, on the
// observer's clock, the time from the new session (the client's
// Reconnected, as a listener hears it) to the observer's notification
// that the node is there again.
func TestExpiry(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(expirySession))
	obs := ens.Conn(t)
	ctx := ctxFor(t, 3*time.Minute)
	reconnected := make(chan time.Time, 16)
	go func() {
		for s := range c.Listen(ctx) {
			if s == connection.Reconnected {
				reconnected <- time.Now()
			}
		}
	}()

	p := root + "/members/a"
	n := newNode(t, c, p, []byte("v0"))
	seq := newNode(t, c, root+"/seq/m-", []byte("v0"), node.WithMode(connection.EphemeralSequential))
	created(t, n)
	created(t, seq)
	var lags []time.Duration
	for i := 1; i <= expiryRounds; i++ {
		old := c.Session().ID()
		waitFor(t, obs, p, fmt.Sprintf("v%d", i-1), old, 10*time.Second)
		_, _, gone, err := obs.ExistsW(p)
		if err != nil {
			t.Fatal(err)
		}
		proxy.Blackhole()
		cut := time.Now()
		select {
		case ev := <-gone:
			if ev.Type != zk.EventNodeDeleted {
				t.Fatalf("round %d: event %v, want the node's deletion at expiry", i, ev.Type)
			}
		case <-time.After(10 * expirySession):
			t.Fatalf("round %d: the server did not expire the session", i)
		}
		// New data while cut off: the node is made again with it.
		setDone := make(chan error, 1)
		go func() { setDone <- n.SetData(ctx, []byte(fmt.Sprintf("v%d", i))) }()
		ok, _, back, err := obs.ExistsW(p)
		if err != nil || ok {
			t.Fatalf("round %d: exists %v, %v", i, ok, err)
		}
		for len(reconnected) > 0 {
			<-reconnected
		}
		proxy.Restore()
		var present, established time.Time
		select {
		case ev := <-back:
			present = time.Now()
			if ev.Type != zk.EventNodeCreated {
				t.Fatalf("round %d: event %v, want the node made again", i, ev.Type)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: not made again within 30 s", i)
		}
		select {
		case established = <-reconnected:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no Reconnected", i)
		}
		if err := <-setDone; err != nil {
			t.Fatalf("round %d: SetData: %v", i, err)
		}
		sid := c.Session().ID()
		if sid == old {
			t.Fatalf("round %d: same session after the expiry", i)
		}
		st := waitFor(t, obs, p, fmt.Sprintf("v%d", i), sid, 10*time.Second)
		if st.EphemeralOwner != sid {
			t.Fatalf("round %d: owner %#x, want %#x", i, st.EphemeralOwner, sid)
		}
		zktest.Eventually(t, 10*time.Second, "the sequential node is back, one copy", func() error {
			ks := kids(t, obs, root+"/seq")
			if len(ks) != 1 || root+"/seq/"+ks[0] != seq.Path() {
				return fmt.Errorf("children %v, want %s alone", ks, seq.Path())
			}
			return nil
		})
		lags = append(lags, present.Sub(established))
		t.Logf("round %d: present %v after the new session (%v after the cut)", i, present.Sub(established), present.Sub(cut))
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	t.Logf("new session -> node present, as the observer saw it: min %v, median %v, max %v over %d expiries",
		lags[0], lags[len(lags)/2], lags[len(lags)-1], len(lags))
}

// TestSuspension: a short cut (well within the session timeout) ends the
// presence under the standard policy (the node may go and the client would
// not hear); the same node is present again once the connection is back.
// Under the session policy the presence lasts through it.
func TestSuspension(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	obs := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	for _, policy := range []connection.ErrorPolicy{connection.StandardPolicy, connection.SessionPolicy} {
		t.Run(policy.String(), func(t *testing.T) {
			proxy := ens.Proxy(t)
			c := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second), connection.WithErrorPolicy(policy))
			p := root + "/" + policy.String()
			n := newNode(t, c, p, []byte("v"))
			done, err := n.Trust(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, before := get(t, obs, p)
			proxy.Cut() // suspended at once; back well within the session timeout
			if policy == connection.StandardPolicy {
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("presence not ended by the suspension")
				}
				if !errors.Is(n.Err(), node.ErrSuspended) {
					t.Fatalf("Err = %v, want ErrSuspended", n.Err())
				}
			} else {
				zktest.Eventually(t, 10*time.Second, "suspended", func() error {
					if c.State() != connection.Suspended {
						return errors.New(c.State().String())
					}
					return nil
				})
				if closed(done) {
					t.Fatalf("presence ended under the session policy: %v", n.Err())
				}
			}
			proxy.Restore()
			if _, err := n.Trust(ctx); err != nil {
				t.Fatal(err)
			}
			if _, st := get(t, obs, p); st == nil || st.Czxid != before.Czxid {
				t.Fatalf("not the same node after the reconnect: %+v", st)
			}
		})
	}
}

// TestLeaderRestart: on a 3-server ensemble the leader is stopped, and
// started again after a new leader is elected, while the data changes. The
// nodes are present afterwards, owned by the client's session, one copy
// each, with the newest data.
func TestLeaderRestart(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	c := open(t, ens.Servers(), connection.WithSessionTimeout(10*time.Second))
	obs := ens.Conn(t)
	ctx := ctxFor(t, 2*time.Minute)
	n := newNode(t, c, "/members/a", []byte("v1"))
	seq := newNode(t, c, "/seq/m-", []byte("v1"), node.WithMode(connection.EphemeralSequential))
	created(t, n)
	created(t, seq)
	sid := c.Session().ID()
	_, before := get(t, obs, "/members/a")

	leader := ens.MustLeader(t)
	stopped := time.Now()
	if err := ens.Stop(leader); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, x := range []*node.Node{n, seq} {
		wg.Add(1)
		go func(x *node.Node) {
			defer wg.Done()
			errs <- x.SetData(ctx, []byte("v2"))
		}(x)
	}
	next := -1
	zktest.Eventually(t, 30*time.Second, "a new leader", func() error {
		var err error
		next, err = ens.Leader()
		return err
	})
	t.Logf("server %d leads after server %d stopped (%v)", next, leader, time.Since(stopped))
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("SetData across the election: %v", err)
		}
	}
	if _, err := n.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	owner := c.Session().ID()
	t.Logf("present again %v after the leader stopped; session kept: %v", time.Since(stopped), owner == sid)
	after := waitFor(t, obs, "/members/a", "v2", owner, 10*time.Second)
	if owner == sid && after.Czxid != before.Czxid {
		t.Fatalf("the session lived, yet the node was made again (czxid %d, was %d)", after.Czxid, before.Czxid)
	}
	waitFor(t, obs, seq.Path(), "v2", owner, 10*time.Second)
	if ks := kids(t, obs, "/members"); len(ks) != 1 {
		t.Fatalf("/members holds %v", ks)
	}
	if ks := kids(t, obs, "/seq"); len(ks) != 1 {
		t.Fatalf("/seq holds %v", ks)
	}
}

// countWatcher follows the children of dirs from the observer's session,
// listing them at every change, and remembers the most it saw at once in
// each: the observer's view of "never two copies".
type countWatcher struct {
	mu   sync.Mutex
	most map[string]int
	stop chan struct{}
	wg   sync.WaitGroup
}

func watchCounts(t *testing.T, conn *zk.Conn, dirs ...string) *countWatcher {
	w := &countWatcher{most: map[string]int{}, stop: make(chan struct{})}
	for _, dir := range dirs {
		w.wg.Add(1)
		go func(dir string) {
			defer w.wg.Done()
			for {
				// ExistsW first: the directory may not exist yet.
				ok, _, ech, err := conn.ExistsW(dir)
				if err != nil {
					return
				}
				if !ok {
					select {
					case <-ech:
						continue
					case <-w.stop:
						return
					}
				}
				ks, _, ch, err := conn.ChildrenW(dir)
				if errors.Is(err, zk.ErrNoNode) {
					continue
				}
				if err != nil {
					return
				}
				w.mu.Lock()
				w.most[dir] = max(w.most[dir], len(ks))
				w.mu.Unlock()
				select {
				case <-ch:
				case <-w.stop:
					return
				}
			}
		}(dir)
	}
	t.Cleanup(w.close)
	return w
}

func (w *countWatcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *countWatcher) max(dir string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.most[dir]
}

// proxiedClient is the set-up of a test that drops a client's answers:
// the root of the test's tree, the observer's session, and a client
// through a proxy, its session timeout the one given.
func proxiedClient(t *testing.T, ens *zktest.Ensemble, timeout time.Duration) (root string, obs *zk.Conn, proxy *zktest.Proxy, c *connection.Client) {
	t.Helper()
	root, obs = ens.Root(t), ens.Conn(t)
	proxy = ens.Proxy(t)
	return root, obs, proxy, open(t, proxy.Servers(), connection.WithSessionTimeout(timeout))
}

// restoreOnceLost restores the proxy once c's session first is lost
// (lost), or after hold with the session kept.
func restoreOnceLost(t *testing.T, proxy *zktest.Proxy, c *connection.Client, first int64, lost bool, hold time.Duration) {
	t.Helper()
	if lost {
		zktest.Eventually(t, 20*time.Second, "the client's session lost", func() error {
			if s := c.Session(); s != nil && s.ID() == first {
				return errors.New("still the first session")
			}
			return nil
		})
	} else {
		time.Sleep(hold)
	}
	proxy.Restore()
}

// TestLostCreateAnswer: the creates reach the server and their answers are
// lost (the proxy drops everything the server sends), within the session
// and beyond it. The node is made once: at no listing did the observer see
// two copies, and in the end there is one, owned by the client's session.
func TestLostCreateAnswer(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration // the client's session timeout
		hold    time.Duration // how long answers are dropped, beyond the creates' arrival
		lost    bool          // the client's session ends meanwhile
	}{
		// go-zookeeper waits a second before it dials a single server
		// again: 8 s leave room for it on a loaded machine.
		{"within the session", 8 * time.Second, 500 * time.Millisecond, false},
		{"beyond the session", 3 * time.Second, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, obs, proxy, c := proxiedClient(t, ens, tc.timeout)
			first := c.Session().ID()
			// The parents exist, so that the first requests are the
			// creates.
			for _, dir := range []string{root + "/fixed", root + "/seq"} {
				if _, err := obs.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
			}
			counts := watchCounts(t, obs, root+"/fixed", root+"/seq")
			proxy.DropReplies()
			n := newNode(t, c, root+"/fixed/a", []byte("v"))
			seq := newNode(t, c, root+"/seq/m-", []byte("v"), node.WithMode(connection.EphemeralSequential))
			zktest.Eventually(t, 10*time.Second, "both creates applied", func() error {
				if len(kids(t, obs, root+"/fixed")) != 1 || len(kids(t, obs, root+"/seq")) != 1 {
					return errors.New("not yet")
				}
				return nil
			})
			restoreOnceLost(t, proxy, c, first, tc.lost, tc.hold)
			created(t, n)
			created(t, seq)
			sid := c.Session().ID()
			if (sid != first) != tc.lost {
				t.Fatalf("session %#x after %#x", sid, first)
			}
			waitFor(t, obs, root+"/fixed/a", "v", sid, 20*time.Second)
			waitFor(t, obs, seq.Path(), "v", sid, 20*time.Second)
			if ks := kids(t, obs, root+"/seq"); len(ks) != 1 {
				t.Fatalf("/seq holds %v", ks)
			}
			for _, dir := range []string{root + "/fixed", root + "/seq"} {
				if m := counts.max(dir); m != 1 {
					t.Errorf("%s: the observer saw %d nodes at once", dir, m)
				}
			}
		})
	}
}

// TestSetDataRacingRecreate: SetData while someone keeps deleting the node
// (each delete makes the worker make it again): every SetData returns, and
// the node ends with the newest data.
func TestSetDataRacingRecreate(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	p := root + "/a"
	n := createdNode(t, c, p, []byte("v0"))
	stop := make(chan struct{})
	deleter := make(chan int)
	go func() {
		deletes := 0
		defer func() { deleter <- deletes }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := obs.Delete(p, -1); err == nil {
				deletes++
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	const rounds = 50
	for i := 1; i <= rounds; i++ {
		if err := n.SetData(ctx, []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatalf("SetData %d: %v", i, err)
		}
	}
	close(stop)
	t.Logf("%d deletes while %d SetData ran", <-deleter, rounds)
	waitFor(t, obs, p, fmt.Sprintf("v%d", rounds), c.Session().ID(), 10*time.Second)
	if _, err := n.Trust(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCloseWhileCreateUnanswered: Close whose context ends while the
// create's answer is lost returns the context's error; the node the create
// made is deleted in the background once the connection is back (or goes
// with the session): nothing is left.
func TestCloseWhileCreateUnanswered(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	obs := ens.Conn(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	proxy.DropReplies()
	n, err := node.New(c, root+"/a", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the create applied", func() error {
		if _, st := get(t, obs, root+"/a"); st == nil {
			return errors.New("no node")
		}
		return nil
	})
	err = n.Close(ctxFor(t, 300*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the context's deadline", err)
	}
	proxy.Restore()
	zktest.Eventually(t, 30*time.Second, "the node deleted", func() error {
		if _, st := get(t, obs, root+"/a"); st != nil {
			return errors.New("still there")
		}
		return nil
	})
}

// TestLostCreateAnswerPersistent: a persistent node's create reaches the
// server and its answer is lost, within the session and beyond it. The
// node it made is the Node's: present, with the Node's data, one copy,
// and deleted by Close — never left behind as someone else's.
func TestLostCreateAnswerPersistent(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration // the client's session timeout
		lost    bool          // the client's session ends meanwhile
	}{
		{"within the session", 8 * time.Second, false},
		{"beyond the session", 3 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, obs, proxy, c := proxiedClient(t, ens, tc.timeout)
			ctx := ctxFor(t, time.Minute)
			first := c.Session().ID()
			if _, err := obs.Create(root+"/dir", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			p := root + "/dir/a"
			proxy.DropReplies()
			n := newNode(t, c, p, []byte("v"), node.WithMode(connection.Persistent))
			zktest.Eventually(t, 10*time.Second, "the create applied", func() error {
				if _, st := get(t, obs, p); st == nil {
					return errors.New("no node")
				}
				return nil
			})
			_, made := get(t, obs, p)
			restoreOnceLost(t, proxy, c, first, tc.lost, 500*time.Millisecond)
			created(t, n)
			if sid := c.Session().ID(); (sid != first) != tc.lost {
				t.Fatalf("session %#x after %#x", sid, first)
			}
			if _, err := n.Trust(ctx); err != nil {
				t.Fatalf("the Node does not take the node it made: %v", err)
			}
			if _, st := get(t, obs, p); st == nil || st.Czxid != made.Czxid {
				t.Fatalf("the node %+v, made %+v", st, made)
			}
			if err := n.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if _, st := get(t, obs, p); st != nil {
				t.Fatalf("Close left the node it made: %+v", st)
			}
		})
	}
}

// TestCloseDeletesNodeMadeAgainInNewSession: a persistent node deleted
// while its client is cut off until its session expires is made again by
// the Node in the new session: it is the Node's, and Close deletes it.
func TestCloseDeletesNodeMadeAgainInNewSession(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	obs := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	p := root + "/x"
	n := createdNode(t, c, p, []byte("v"), node.WithMode(connection.Persistent))
	first := c.Session().ID()
	_, old := get(t, obs, p)
	proxy.Blackhole()
	if err := obs.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "the client's session lost", func() error {
		if s := c.Session(); s != nil && s.ID() == first {
			return errors.New("still the first session")
		}
		return nil
	})
	proxy.Restore()
	zktest.Eventually(t, 30*time.Second, "the node made again", func() error {
		if _, st := get(t, obs, p); st == nil || st.Czxid == old.Czxid {
			return errors.New("not yet")
		}
		return nil
	})
	if _, err := n.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, st := get(t, obs, p); st != nil {
		t.Fatalf("Close left the node the Node made again: %+v", st)
	}
}
