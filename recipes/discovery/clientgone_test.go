package discovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// TestServiceCacheClientClosedBeforeTrust: a service cache whose client is
// cut off before the first load is in, then closed: its listener hears one
// Untrusted (connection.ErrClosed), the last; Trust fails with it, waiting
// callers too.
func TestServiceCacheClientClosedBeforeTrust(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	base := ens.Root(t) + "/services"
	register(t, newDiscovery(t, open(t, ens.Servers()), base), discovery.Instance{Name: "web", Address: "10.0.0.1", Port: 80})
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	proxy.Blackhole()
	d := newDiscovery(t, c, base)
	sc, err := d.Cache("web")
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	events, err := sc.Listen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Type != discovery.Resync || ev.Trusted {
		t.Fatalf("first event %v trusted %v", ev.Type, ev.Trusted)
	}
	trust := make(chan error, 3)
	for range 3 {
		go func() { _, err := sc.Trust(context.Background()); trust <- err }()
	}
	time.Sleep(100 * time.Millisecond)
	c.Close()
	proxy.Restore()
	got := testkit.CollectUntilQuiet(events, func(ev discovery.Event) bool {
		return ev.Type == discovery.Untrusted && errors.Is(ev.Err, connection.ErrClosed)
	}, time.Second, 10*time.Second)
	if len(got) == 0 || got[len(got)-1].Type != discovery.Untrusted || !errors.Is(got[len(got)-1].Err, connection.ErrClosed) {
		t.Errorf("events after the client closed: %v", got)
	}
	n := 0
	for _, ev := range got {
		if ev.Type == discovery.Untrusted {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d Untrusted, want 1: %v", n, got)
	}
	for range 3 {
		select {
		case err := <-trust:
			if !errors.Is(err, connection.ErrClosed) {
				t.Errorf("Trust: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Trust waiting 10 s after the client closed")
		}
	}
	if !errors.Is(sc.Err(), connection.ErrClosed) {
		t.Errorf("Err %v", sc.Err())
	}
	sc.Close()
	if _, err := sc.Trust(context.Background()); err == nil || errors.Is(err, connection.ErrClosed) {
		t.Errorf("Trust after Close: %v, want the cache's ErrClosed", err)
	}
}
