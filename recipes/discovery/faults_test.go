package discovery_test

import (
	"slices"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// TestExpiry: the registrar is cut off until the server expires its
// session; a watcher's cache sees its instance removed; the registration's
// presence has ended (Untrusted closed). Let through, the instance is made
// again in the new session with its newest fields, and the watcher sees it
// added. Each round measures, on one clock, the time from the new session
// (the registrar's Reconnected, as a listener hears it) to the watcher's
// Added event.
func TestExpiry(t *testing.T) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	ctx := ctxFor(t, 3*time.Minute)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	reconnected := make(chan time.Time, 16)
	go func() {
		for s := range c.Listen(ctx) {
			if s == connection.Reconnected {
				reconnected <- time.Now()
			}
		}
	}()
	d := newDiscovery(t, c, root+"/services")
	r := register(t, d, discovery.Instance{Name: "web", ID: "a", Port: 1})
	watcher := newCache(t, newDiscovery(t, open(t, ens.Servers()), root+"/services"), "web")
	events, err := watcher.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := func(want discovery.EventType) (discovery.Event, time.Time) {
		t.Helper()
		for {
			select {
			case ev := <-events:
				switch ev.Type {
				case want:
					return ev, time.Now()
				case discovery.Added, discovery.Removed, discovery.Updated, discovery.Overflow:
					t.Fatalf("event %v %+v, want %v", ev.Type, ev.Instance, want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no %v within 30 s", want)
			}
		}
	}
	if ev, _ := next(discovery.Resync); !slices.Equal(ids(ev.Instances), []string{"a"}) {
		t.Fatalf("first view %v", ids(ev.Instances))
	}
	var lags []time.Duration
	for round := 1; round <= 3; round++ {
		done, err := r.Trust(ctx)
		if err != nil {
			t.Fatal(err)
		}
		old := c.Session().ID()
		proxy.Blackhole()
		next(discovery.Removed)
		if !closed(done) {
			t.Fatalf("round %d: the registration's Untrusted is open after the expiry", round)
		}
		i := r.Instance()
		i.Port = round + 1
		updated := make(chan error, 1)
		go func() { updated <- r.Update(ctx, i) }()
		for len(reconnected) > 0 {
			<-reconnected
		}
		proxy.Restore()
		ev, seen := next(discovery.Added)
		var established time.Time
		select {
		case established = <-reconnected:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no Reconnected", round)
		}
		if ev.Instance.Port != round+1 && ev.Instance.Port != round {
			t.Fatalf("round %d: back with port %d", round, ev.Instance.Port)
		}
		if err := <-updated; err != nil {
			t.Fatal(err)
		}
		if c.Session().ID() == old {
			t.Fatalf("round %d: same session after the expiry", round)
		}
		if _, err := r.Trust(ctx); err != nil {
			t.Fatal(err)
		}
		lags = append(lags, seen.Sub(established))
		t.Logf("round %d: the watcher saw the instance %v after the new session", round, seen.Sub(established))
		if ev.Instance.Port == round {
			next(discovery.Updated)
		}
	}
	slices.Sort(lags)
	t.Logf("new session -> instance seen by a watcher: min %v, median %v, max %v", lags[0], lags[len(lags)/2], lags[len(lags)-1])
}
