package group_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/group"
)

// TestResyncTrusted: a listener that starts while the view is trusted
// gets no Trusted event (it came before), so its first event, the
// Resync, says the view is trusted; one that starts after the trust
// ended (the client closed) is told it is not.
func TestResyncTrusted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	g := join(t, c, ens.Root(t)+"/workers", "a")
	done, err := g.Cache().Trust(ctxFor(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	events, err := g.Listen(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.Type != group.Resync || !ev.Trusted {
		t.Fatalf("first event %v, trusted %v; want RESYNC, trusted", ev.Type, ev.Trusted)
	}
	c.Close()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the view stayed trusted after its client closed")
	}
	late, err := g.Listen(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, late); ev.Type != group.Resync || ev.Trusted {
		t.Fatalf("first event after the client closed %v, trusted %v; want RESYNC, not trusted", ev.Type, ev.Trusted)
	}
}
