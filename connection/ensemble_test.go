package connection_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// dialLog records every address a client dials.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	return net.DialTimeout(network, addr, timeout)
}

// since returns the addresses dialed from the nth dial on.
func (d *dialLog) since(n int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs[n:])
}

func (d *dialLog) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.addrs)
}

// up reports whether c has a connection to its session.
func up(c *connection.Client) bool {
	st := c.State()
	return st == connection.Connected || st == connection.Reconnected
}

// waitFor polls cond until it holds or the test's patience ends.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sameServers(c *connection.Client, want []string) func() bool {
	return func() bool {
		got, w := c.Servers(), slices.Clone(want)
		slices.Sort(got)
		slices.Sort(w)
		return slices.Equal(got, w)
	}
}

// A tracking client follows a server added and the removal of the server
// it is connected to: it moves to a member in the same session, its next
// connections never go to the removed server (which still serves), its
// namespace stays, and a lock it holds is never held by two at once.
func TestEnsembleTrackerFollowsAddedAndRemovedServers(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithReconfig(1), zktest.WithLogf(t.Logf))
	all := ens.Servers()
	var dials dialLog
	c := open(t, all[:3], connection.WithEnsembleTracker(), connection.WithNamespace("/app"),
		connection.WithDialer(dials.dial), connection.WithSessionTimeout(10*time.Second))
	other := open(t, all[:3], connection.WithEnsembleTracker())
	ctx := ctxFor(t, 2*time.Minute)
	waitFor(t, 10*time.Second, "the tracker reads the three members", sameServers(c, all[:3]))
	session := c.Session().ID()

	// A lock held by c while the ensemble changes, which other wants.
	held, err := mutex.New(c, "/locks/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter, err := mutex.New(other, "/app/locks/a")
	if err != nil {
		t.Fatal(err)
	}
	type acquired struct {
		err           error
		firstHoldOver bool
	}
	waited := make(chan acquired, 1)
	go func() {
		err := waiter.Lock(ctx)
		waited <- acquired{err, closed(held.Done())}
	}()

	// A server joins; a configuration of it alone before it runs has no
	// quorum in sync.
	line, err := ens.MemberLine(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconfig(ctx, []string{line}, -1); !errors.Is(err, connection.ErrNewConfigNoQuorum) {
		t.Fatalf("a reconfig to a server not running: %v, want ErrNewConfigNoQuorum", err)
	}
	if err := ens.Start(3); err != nil {
		t.Fatal(err)
	}
	st, err := c.IncrementalReconfig(ctx, []string{line}, nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the tracker adds the fourth server", sameServers(c, all))
	waitFor(t, 10*time.Second, "the other client's tracker adds it", sameServers(other, all))
	cfg, err := c.EnsembleConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Members) != 4 || cfg.Version != st.Mzxid {
		t.Fatalf("configuration after the add: %+v; the reconfig's Stat %+v", cfg, st)
	}

	// The server c is connected to leaves; it goes on serving.
	removed := c.ConnectedServer()
	idx := slices.Index(all, removed)
	if idx < 0 {
		t.Fatalf("connected to %s, not a server of %v", removed, all)
	}
	members := slices.Delete(slices.Clone(all), idx, idx+1)
	removing := time.Now()
	if _, err := c.IncrementalReconfig(ctx, nil, []string{cfg.MemberID(removed)}, cfg.Version); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the tracker removes the server", sameServers(c, members))
	mark := dials.count()
	waitFor(t, 15*time.Second, "the client moves to a member", func() bool {
		return c.ConnectedServer() != removed && up(c)
	})
	t.Logf("moved from %s to %s in %v after the reconfig was sent", removed, c.ConnectedServer(), time.Since(removing).Round(time.Millisecond))
	if mode, err := zktest.ServerMode(removed, time.Second); err != nil {
		t.Logf("the removed server does not answer srvr: %v", err)
	} else {
		t.Logf("the removed server still says %q", mode)
	}
	if got := c.Session().ID(); got != session {
		t.Fatalf("session %#x after the move, was %#x", got, session)
	}

	// Its next connections go to members only, though the removed
	// server still serves: kill the member it is on, twice over.
	for range 2 {
		on := c.ConnectedServer()
		k := slices.Index(all, on)
		if err := ens.Kill(k); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the client reconnects to a member", func() bool {
			return c.ConnectedServer() != on && up(c)
		})
		if err := ens.Start(k); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range dials.since(mark) {
		if a == removed {
			t.Fatalf("dialed the removed server %s after the tracker dropped it (dials since: %v)", removed, dials.since(mark))
		}
	}
	if c.Session().ID() != session {
		t.Fatalf("the session changed: %#x, was %#x", c.Session().ID(), session)
	}

	// The namespace is kept.
	if err := c.EnsurePath(ctx, "/after"); err != nil {
		t.Fatal(err)
	}
	// other may be on a server still catching up after the kills: its
	// sync brings that server to the leader's state first.
	if err := other.Sync(ctx, "/app"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := other.Exists(ctx, "/app/after"); err != nil || !ok {
		t.Fatalf("/app/after: %v, %v", ok, err)
	}

	// The lock: never two holders. Moving off the removed server
	// suspended c, which ended its hold before anything else could.
	select {
	case got := <-waited:
		if got.err != nil {
			t.Fatalf("the waiter: %v", got.err)
		}
		if !got.firstHoldOver {
			t.Fatal("the waiter acquired while the first hold had not ended")
		}
		if !errors.Is(held.Err(), connection.ErrSuspended) && !errors.Is(held.Err(), connection.ErrSessionLost) {
			t.Fatalf("the first hold ended with %v", held.Err())
		}
		t.Logf("the first hold ended: %v; the waiter acquired", held.Err())
		// The kills above may have suspended the waiter's client too.
		if err := waiter.Unlock(ctx); err != nil && !errors.Is(err, mutex.ErrLockLost) {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		if !held.Held() || closed(held.Done()) {
			t.Fatalf("neither holds: %v", held.Err())
		}
		t.Log("the first hold lasted throughout")
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if got := <-waited; got.err != nil || !got.firstHoldOver {
			t.Fatalf("the waiter after the unlock: %+v", got)
		}
		if err := waiter.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// lockTurns has clients take a lock in turns while the ensemble changes,
// and checks at every acquisition that the previous hold had ended.
type lockTurns struct {
	mu       sync.Mutex
	last     <-chan struct{} // the Done of the newest hold
	overlaps int
	turns    int
	lost     int
}

func (l *lockTurns) run(ctx context.Context, t *testing.T, m *mutex.Mutex) {
	for ctx.Err() == nil {
		lockCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := m.Lock(lockCtx)
		cancel()
		if err != nil {
			continue // suspended, or the wait ended: try again
		}
		l.mu.Lock()
		if l.last != nil && !closed(l.last) {
			l.overlaps++
		}
		l.last = m.Done()
		l.turns++
		l.mu.Unlock()
		select {
		case <-time.After(20 * time.Millisecond):
		case <-m.Done():
		case <-ctx.Done():
		}
		if closed(m.Done()) {
			l.mu.Lock()
			l.lost++
			l.mu.Unlock()
		}
		unlockCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.Unlock(unlockCtx); err != nil && !errors.Is(err, mutex.ErrLockLost) {
			t.Errorf("unlock: %v", err)
		}
		cancel()
	}
}

// A tracking client follows an ensemble whose three servers are replaced
// one at a time (a new server added, an old one removed and stopped): it
// ends connected to the new members only, in its first session; a lock
// taken in turns by two tracking clients throughout is never held by two;
// its cache of a node written throughout ends with the last write.
func TestEnsembleTrackerFollowsAReplacedEnsemble(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithReconfig(3), zktest.WithLogf(t.Logf))
	all := ens.Servers()
	var dials dialLog
	c := open(t, all[:3], connection.WithEnsembleTracker(), connection.WithDialer(dials.dial),
		connection.WithSessionTimeout(10*time.Second))
	other := open(t, all[:3], connection.WithEnsembleTracker(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 4*time.Minute)
	waitFor(t, 10*time.Second, "the tracker reads the three members", sameServers(c, all[:3]))
	session := c.Session().ID()

	var turns lockTurns
	work, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, cl := range []*connection.Client{c, other} {
		m, err := mutex.New(cl, "/locks/replaced")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			turns.run(work, t, m)
		}()
	}

	// A cache on c of a node other writes throughout.
	if _, err := other.Create(ctx, "/watched", []byte("0"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	view, err := cache.New(c, "/watched")
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; work.Err() == nil; n++ {
			setCtx, cancel := context.WithTimeout(work, 5*time.Second)
			_, _ = other.Set(setCtx, "/watched", []byte(strconv.Itoa(n)), -1)
			cancel()
			time.Sleep(10 * time.Millisecond)
		}
	}()

	members := slices.Clone(all[:3])
	var mark int
	for i := range 3 {
		spare := 3 + i
		if err := ens.Start(spare); err != nil {
			t.Fatal(err)
		}
		line, err := ens.MemberLine(spare)
		if err != nil {
			t.Fatal(err)
		}
		admin := open(t, members)
		if _, err := admin.IncrementalReconfig(ctx, []string{line}, []string{strconv.Itoa(i + 1)}, -1); err != nil {
			t.Fatal(err)
		}
		admin.Close()
		members = append(slices.Delete(members, 0, 1), all[spare])
		waitFor(t, 20*time.Second, fmt.Sprintf("step %d: the tracker follows", i), sameServers(c, members))
		waitFor(t, 20*time.Second, fmt.Sprintf("step %d: the other tracker follows", i), sameServers(other, members))
		mark = dials.count()
		if err := ens.Stop(i); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, fmt.Sprintf("step %d: the client is on a member", i), func() bool {
			return slices.Contains(members, c.ConnectedServer()) && up(c)
		})
		t.Logf("step %d: server %d replaced by %d; the client is on %s", i, i, spare, c.ConnectedServer())
	}
	for _, a := range dials.since(mark) {
		if !slices.Contains(members, a) {
			t.Errorf("dialed %s, not a member, after the tracker's last update (dials since: %v)", a, dials.since(mark))
		}
	}
	if got := c.Session().ID(); got != session {
		t.Errorf("session %#x at the end, was %#x", got, session)
	}
	turns.mu.Lock()
	before := turns.turns
	turns.mu.Unlock()
	waitFor(t, 30*time.Second, "a turn of the lock on the new members", func() bool {
		turns.mu.Lock()
		defer turns.mu.Unlock()
		return turns.turns > before
	})
	stop()
	wg.Wait()
	if _, err := other.Set(ctx, "/watched", []byte("final"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := view.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the cache follows the last write", func() bool {
		n, ok := view.Get("/watched")
		return ok && string(n.Data) == "final"
	})
	t.Logf("lock turns %d, holds lost %d, overlaps %d", turns.turns, turns.lost, turns.overlaps)
	if turns.overlaps != 0 {
		t.Fatalf("%d acquisitions while the previous hold had not ended", turns.overlaps)
	}
}
