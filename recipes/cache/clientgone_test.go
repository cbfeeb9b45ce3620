package cache_test

// A closed client ends the cache's work whenever it comes: before the
// first read, during the first load, while trusted, suspended or after an
// expiry. Every listener hears exactly one Untrusted whose Err wraps
// connection.ErrClosed, as its last event; Trust fails at once with that
// error (cache.ErrClosed once the cache is closed too); Close stays prompt
// and idempotent. While the view is not trusted, that Untrusted is the only
// word a listener gets (Trust waited for its context, no Untrusted ends a
// trust period), so that a group or a discovery cache built on the cache
// learns that no trust will come.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// untrustedOf waits for an Untrusted on ch and returns its Err; it fails
// the test on a Trusted, on the channel's close, or after 10 s.
func untrustedOf(t *testing.T, ch <-chan cache.Event) error {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			switch {
			case !ok:
				t.Fatal("the listener's channel closed without an Untrusted")
			case ev.Type == cache.Untrusted:
				return ev.Err
			case ev.Type == cache.Trusted:
				t.Fatal("Trusted while the client is cut off")
			}
		case <-timeout:
			t.Fatal("no Untrusted 10 s after the client closed")
		}
	}
}

// TestClientClosedBeforeTrust: the cache's client is cut off before the
// first load is in, then closed.
func TestClientClosedBeforeTrust(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	mustCreate(t, ens.Conn(t), root+"/a", []byte("a"))
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	proxy.Blackhole() // the first load's reads go unanswered
	c := newCache(t, client, root)
	ch := listen(t, c)
	if ev := <-ch; ev.Type != cache.Resync || ev.Snapshot.Trusted() {
		t.Fatalf("first event %v (trusted %v), want an untrusted Resync", ev.Type, ev.Snapshot.Trusted())
	}
	trusted := make(chan error, 1)
	go func() {
		_, err := c.Trust(context.Background())
		trusted <- err
	}()
	time.Sleep(100 * time.Millisecond) // Trust waits
	client.Close()
	proxy.Restore()
	if err := untrustedOf(t, ch); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Untrusted's Err %v, want connection.ErrClosed", err)
	}
	select {
	case err := <-trusted:
		if !errors.Is(err, connection.ErrClosed) {
			t.Fatalf("Trust: %v, want connection.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Trust still waiting 10 s after the client closed")
	}
	if _, err := c.Trust(context.Background()); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Trust after: %v, want connection.ErrClosed", err)
	}
	if !errors.Is(c.Err(), connection.ErrClosed) {
		t.Fatalf("Err %v, want connection.ErrClosed", c.Err())
	}
}

// TestClientClosedWhileSuspended: the view was trusted, the connection
// is cut (Untrusted with ErrSuspended), and the client is closed while it
// is: a second Untrusted says so.
func TestClientClosedWhileSuspended(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	mustCreate(t, ens.Conn(t), root+"/a", []byte("a"))
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	c := newCache(t, client, root)
	if _, err := c.Trust(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	ch := listen(t, c)
	proxy.Cut()
	if err := untrustedOf(t, ch); !errors.Is(err, cache.ErrSuspended) {
		t.Fatalf("first Untrusted's Err %v, want ErrSuspended", err)
	}
	client.Close()
	proxy.Restore()
	if err := untrustedOf(t, ch); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("second Untrusted's Err %v, want connection.ErrClosed", err)
	}
	if _, err := c.Trust(ctxFor(t, 10*time.Second)); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Trust: %v, want connection.ErrClosed", err)
	}
}

// trustedCache makes a cache of root on client and waits until it trusts
// its view.
func trustedCache(t *testing.T, client *connection.Client, root string, opts ...cache.Option) *cache.Cache {
	t.Helper()
	c := newCache(t, client, root, opts...)
	if _, err := c.Trust(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	return c
}

// listen starts a listener of c, for as long as c is open.
func listen(t testing.TB, c *cache.Cache, opts ...cache.ListenOption) <-chan cache.Event {
	t.Helper()
	ch, err := c.Listen(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// collectUntilQuiet reads ch until it has been quiet for quiet after an
// Untrusted with connection.ErrClosed (or for limit in all), and returns
// what it read.
func collectUntilQuiet(ch <-chan cache.Event, quiet, limit time.Duration) []cache.Event {
	return testkit.CollectUntilQuiet(ch, func(ev cache.Event) bool {
		return ev.Type == cache.Untrusted && errors.Is(ev.Err, connection.ErrClosed)
	}, quiet, limit)
}

// closedTail checks evs for exactly one Untrusted wrapping
// connection.ErrClosed, and nothing after it; it returns what is wrong.
func closedTail(evs []cache.Event) string {
	last, n := -1, 0
	for i, ev := range evs {
		if ev.Type == cache.Untrusted && errors.Is(ev.Err, connection.ErrClosed) {
			last, n = i, n+1
		}
	}
	switch {
	case n == 0:
		return fmt.Sprintf("no Untrusted with connection.ErrClosed in %d events (%s)", len(evs), tail(evs, 0))
	case n > 1:
		return fmt.Sprintf("%d Untrusted with connection.ErrClosed (%s)", n, tail(evs, 0))
	case last != len(evs)-1:
		kinds := map[cache.EventType]int{}
		for _, ev := range evs[last+1:] {
			kinds[ev.Type]++
		}
		return fmt.Sprintf("%d events after the Untrusted with connection.ErrClosed (%v): %s", len(evs)-1-last, kinds, tail(evs, last))
	}
	return ""
}

func tail(evs []cache.Event, from int) string {
	var b strings.Builder
	for i := from; i < len(evs) && i < from+12; i++ {
		ev := evs[i]
		fmt.Fprintf(&b, "%v %s %v; ", ev.Type, ev.Path, ev.Err)
	}
	return b.String()
}

func manyNodes(t *testing.T, conn *zk.Conn, root string, n int) {
	t.Helper()
	var reqs []any
	for i := range n {
		reqs = append(reqs, &zk.CreateRequest{Path: fmt.Sprintf("%s/n%d", root, i), Data: []byte("d"), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 200 || i == n-1 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
}

// trustErrWithin calls Trust and fails the test unless it returns an error
// matching want within d.
func trustErrWithin(t *testing.T, c *cache.Cache, want error, d time.Duration) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Trust(context.Background())
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, want) {
			t.Errorf("Trust: %v, want %v", err, want)
		}
	case <-time.After(d):
		t.Fatalf("Trust still waiting %v after the client closed", d)
	}
}

// TestClientClosedDuringFirstLoadIsTheLastEvent: the client is closed
// while the first load of many nodes is under way (reads in flight, answers
// queued): no Created nor Initialized follows the Untrusted that says so.
func TestClientClosedDuringFirstLoadIsTheLastEvent(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	manyNodes(t, ens.Conn(t), root, 3000)
	const rounds = 5
	fails := 0
	defer func() {
		if fails > 0 {
			t.Errorf("events after the last Untrusted in %d of %d rounds", fails, rounds)
		}
	}()
	for round := range rounds {
		client := open(t, ens.Servers())
		c := newCache(t, client, root)
		ch := listen(t, c)
		// Close once the load has begun to show nodes.
		var evs []cache.Event
		for len(evs) < 50 {
			ev := <-ch
			evs = append(evs, ev)
		}
		client.Close()
		evs = append(evs, collectUntilQuiet(ch, time.Second, 15*time.Second)...)
		if msg := closedTail(evs); msg != "" {
			fails++
			t.Logf("round %d: %s", round, msg)
		}
		trustErrWithin(t, c, connection.ErrClosed, 5*time.Second)
		if !errors.Is(c.Err(), connection.ErrClosed) {
			t.Errorf("round %d: Err %v, want connection.ErrClosed", round, c.Err())
		}
		c.Close()
		trustErrWithin(t, c, cache.ErrClosed, 5*time.Second)
	}
}

// TestClientClosedBeforeFirstRead: a cache made on a client closed at once
// ends with the Untrusted, and Trust fails with connection.ErrClosed; a
// cache made on a client already closed is refused by New with that error,
// or fails Trust with it.
func TestClientClosedBeforeFirstRead(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	mustCreate(t, ens.Conn(t), root+"/a", []byte("a"))
	for round := range 10 {
		client := open(t, ens.Servers())
		c := newCache(t, client, root)
		ch := listen(t, c)
		client.Close()
		evs := collectUntilQuiet(ch, time.Second, 10*time.Second)
		if msg := closedTail(evs); msg != "" {
			t.Errorf("round %d: %s", round, msg)
		}
		trustErrWithin(t, c, connection.ErrClosed, 5*time.Second)
	}
	client := open(t, ens.Servers())
	client.Close()
	c, err := cache.New(client, root)
	if err != nil {
		if !errors.Is(err, connection.ErrClosed) {
			t.Fatalf("New on a closed client: %v", err)
		}
		return
	}
	defer c.Close()
	trustErrWithin(t, c, connection.ErrClosed, 5*time.Second)
}

// TestClientClosedWhileTrustedTellsEachListenerOnce: closed while trusted,
// with several listeners: each hears exactly one Untrusted, the last.
func TestClientClosedWhileTrustedTellsEachListenerOnce(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	manyNodes(t, ens.Conn(t), root, 50)
	for round := range 5 {
		client := open(t, ens.Servers())
		c := trustedCache(t, client, root)
		var chs []<-chan cache.Event
		for range 3 {
			ch := listen(t, c)
			chs = append(chs, ch)
		}
		client.Close()
		for i, ch := range chs {
			evs := collectUntilQuiet(ch, time.Second, 10*time.Second)
			if msg := closedTail(evs); msg != "" {
				t.Errorf("round %d listener %d: %s", round, i, msg)
			}
			n := 0
			for _, ev := range evs {
				if ev.Type == cache.Untrusted {
					n++
				}
			}
			if n != 1 {
				t.Errorf("round %d listener %d: %d Untrusted for one closure: %s", round, i, n, tail(evs, 0))
			}
		}
		trustErrWithin(t, c, connection.ErrClosed, 5*time.Second)
	}
}

// TestClientClosedWhileBlackholed: suspended by a blackhole (no reset: the
// client finds out by its own timeout), then closed.
func TestClientClosedWhileBlackholed(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	manyNodes(t, ens.Conn(t), root, 20)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	c := trustedCache(t, client, root)
	ch := listen(t, c)
	proxy.Blackhole()
	untrustedOf(t, ch)
	waiters := make(chan error, 4)
	for range 4 {
		go func() { _, err := c.Trust(context.Background()); waiters <- err }()
	}
	time.Sleep(100 * time.Millisecond)
	client.Close()
	evs := collectUntilQuiet(ch, time.Second, 10*time.Second)
	if msg := closedTail(evs); msg != "" {
		t.Error(msg)
	}
	for range 4 {
		select {
		case err := <-waiters:
			if !errors.Is(err, connection.ErrClosed) {
				t.Errorf("a waiting Trust: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiting Trust not released 5 s after the client closed")
		}
	}
	proxy.Restore()
}

// TestClientClosedAfterExpiry: the session expires (blackhole past its
// timeout), the client begins a new one, and is closed meanwhile; with and
// without WithClearOnSessionLoss.
func TestClientClosedAfterExpiry(t *testing.T) {
	for _, clear := range []bool{false, true} {
		t.Run(fmt.Sprintf("clear=%v", clear), func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			ens.RequireFaults(t)
			root := ens.Root(t)
			manyNodes(t, ens.Conn(t), root, 200)
			proxy := ens.Proxy(t)
			client := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
			var opts []cache.Option
			if clear {
				opts = append(opts, cache.WithClearOnSessionLoss())
			}
			c := trustedCache(t, client, root, opts...)
			ch := listen(t, c)
			proxy.Blackhole()
			time.Sleep(5 * time.Second) // past the session's timeout
			proxy.Restore()
			// The new session's reads are under way; close amid them.
			var evs []cache.Event
			deadline := time.After(15 * time.Second)
		wait:
			for {
				select {
				case ev := <-ch:
					evs = append(evs, ev)
					if (clear && ev.Type == cache.Created) || (!clear && ev.Type == cache.Untrusted && !errors.Is(ev.Err, cache.ErrSuspended)) {
						break wait
					}
				case <-deadline:
					break wait
				}
			}
			client.Close()
			evs = append(evs, collectUntilQuiet(ch, time.Second, 10*time.Second)...)
			if msg := closedTail(evs); msg != "" {
				t.Error(msg)
			}
			trustErrWithin(t, c, connection.ErrClosed, 5*time.Second)
		})
	}
}

// TestLateListenerHearsClientClosed: a listener that starts after the
// client was closed (view untrusted) hears a Resync that says untrusted,
// then why: one Untrusted with ErrClosed, the last. A group's or a
// discovery cache's listener would wait for trust otherwise.
func TestLateListenerHearsClientClosed(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	mustCreate(t, ens.Conn(t), root+"/a", []byte("a"))
	client := open(t, ens.Servers())
	c := trustedCache(t, client, root)
	client.Close()
	trustErrWithin(t, c, connection.ErrClosed, 5*time.Second)
	ch := listen(t, c)
	ev := <-ch
	if ev.Type != cache.Resync || ev.Snapshot.Trusted() {
		t.Fatalf("first event %v trusted %v, want an untrusted Resync", ev.Type, ev.Snapshot.Trusted())
	}
	evs := collectUntilQuiet(ch, time.Second, 5*time.Second)
	if msg := closedTail(evs); msg != "" {
		t.Errorf("a listener that started after the client closed: %s", msg)
	}
}

// TestOverflowingListenerHearsClientClosed: a listener that fell behind
// (WithBuffer 1) when the client closes before trust hears, after Overflow
// and Resync, the Untrusted with ErrClosed, the last.
func TestOverflowingListenerHearsClientClosed(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	manyNodes(t, ens.Conn(t), root, 500)
	client := open(t, ens.Servers())
	c := newCache(t, client, root)
	ch := listen(t, c, cache.WithBuffer(1))
	time.Sleep(30 * time.Millisecond) // events pile up unread
	client.Close()
	trustErrWithin(t, c, connection.ErrClosed, 5*time.Second)
	time.Sleep(200 * time.Millisecond)
	evs := collectUntilQuiet(ch, time.Second, 5*time.Second)
	if msg := closedTail(evs); msg != "" {
		t.Errorf("an overflowing listener: %s", msg)
	}
}

// TestCloseRacesClientClose: cache.Close and the client's Close at once,
// both orders, many rounds (run with -race): no panic, no deadlock,
// listeners' channels close, Trust says cache.ErrClosed after.
func TestCloseRacesClientClose(t *testing.T) { inWatchModes(t, testCloseRacesClientClose) }

func testCloseRacesClientClose(t *testing.T, opts ...cache.Option) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	manyNodes(t, ens.Conn(t), root, 200)
	for round := range 30 {
		client := open(t, ens.Servers())
		c, err := cache.New(client, root, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ch := listen(t, c, cache.WithBuffer(2))
		if round%3 == 2 {
			if _, err := c.Trust(ctxFor(t, 30*time.Second)); err != nil {
				t.Fatal(err)
			}
		} else {
			time.Sleep(time.Duration(round%5) * 3 * time.Millisecond)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		start := make(chan struct{})
		go func() { defer wg.Done(); <-start; c.Close() }()
		go func() { defer wg.Done(); <-start; client.Close() }()
		go func() {
			for range 3 {
				c.Trust(context.Background())
			}
		}()
		close(start)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close and client Close not done in 10 s", round)
		}
		drained := make(chan struct{})
		go func() {
			for range ch {
			}
			close(drained)
		}()
		select {
		case <-drained:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: listener's channel open 5 s after Close", round)
		}
		trustErrWithin(t, c, cache.ErrClosed, 5*time.Second)
		c.Close()
	}
}

// TestClientClosedUnderChurnIsTheLastEvent: closed while trusted, as nodes
// change (reads of them in flight): nothing after the Untrusted.
func TestClientClosedUnderChurnIsTheLastEvent(t *testing.T) {
	inWatchModes(t, testClientClosedUnderChurnIsTheLastEvent)
}

func testClientClosedUnderChurnIsTheLastEvent(t *testing.T, opts ...cache.Option) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	const nodes = 300
	manyNodes(t, ens.Conn(t), root, nodes)
	writer := ens.Conn(t)
	const rounds = 5
	fails := 0
	for round := range rounds {
		client := open(t, ens.Servers())
		c := trustedCache(t, client, root, opts...)
		ch := listen(t, c)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				writer.Set(fmt.Sprintf("%s/n%d", root, i%nodes), []byte(fmt.Sprint(i)), -1)
			}
		}()
		var evs []cache.Event
		for len(evs) < 100 {
			evs = append(evs, <-ch)
		}
		client.Close()
		evs = append(evs, collectUntilQuiet(ch, time.Second, 10*time.Second)...)
		close(stop)
		wg.Wait()
		if msg := closedTail(evs); msg != "" {
			fails++
			t.Logf("round %d: %s", round, msg)
		}
		c.Close()
	}
	if fails > 0 {
		t.Errorf("events after the last Untrusted in %d of %d rounds", fails, rounds)
	}
}
