package discovery_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// TestResyncTrusted: a listener that starts while the view is trusted
// gets no Trusted event (it came before), so its first event, the
// Resync, says the view is trusted; one that starts after the trust
// ended (the client closed) is told it is not.
func TestResyncTrusted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	sc := newCache(t, newDiscovery(t, c, ens.Root(t)+"/services"), "web")
	done, err := sc.Trust(ctxFor(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	first := func(what string) discovery.Event {
		t.Helper()
		events, err := sc.Listen(ctxFor(t, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-events:
			return ev
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no event within 20 s", what)
		}
		return discovery.Event{}
	}
	if ev := first("trusted"); ev.Type != discovery.Resync || !ev.Trusted {
		t.Fatalf("first event %v, trusted %v; want RESYNC, trusted", ev.Type, ev.Trusted)
	}
	c.Close()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the view stayed trusted after its client closed")
	}
	if ev := first("closed"); ev.Type != discovery.Resync || ev.Trusted {
		t.Fatalf("first event after the client closed %v, trusted %v; want RESYNC, not trusted", ev.Type, ev.Trusted)
	}
}
