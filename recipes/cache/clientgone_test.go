package cache_test

// A client closed while the view is not trusted — before its first trust
// period, or between two — ends the cache's work as one closed while it is
// trusted does: Trust fails with the client's error at once (it waited
// for its context), and every listener hears one Untrusted whose Err wraps
// connection.ErrClosed (none came: Untrusted was only sent to end a trust
// period), so that a group or a discovery cache built on it learns that
// no trust will come.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
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
	ch, err := c.Listen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
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
	ch, err := c.Listen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
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
