package connection_test

import (
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
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

	// A server joins.
	if err := ens.Start(3); err != nil {
		t.Fatal(err)
	}
	line, err := ens.MemberLine(3)
	if err != nil {
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
