package connection_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestTrustedNowFollowsTheSession: the client's current session is
// trusted; nil and another client's session are not; a silent server
// ends the trust by the time Suspended is reported, a reconnection of the
// same session brings it back, and Close ends it.
func TestTrustedNowFollowsTheSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second))
	states := c.Listen(ctxFor(t, time.Minute))
	s := c.Session()
	if !c.TrustedNow(s) {
		t.Fatal("the client's session is not trusted")
	}
	other := open(t, ens.Servers())
	if c.TrustedNow(nil) || c.TrustedNow(other.Session()) {
		t.Fatal("nil or another client's session trusted")
	}

	p.Blackhole()
	expect(t, states, 10*time.Second, connection.Suspended)
	if c.TrustedNow(s) {
		t.Fatal("trusted once Suspended was reported")
	}
	p.Restore()
	expect(t, states, 20*time.Second, connection.Reconnected)
	if c.Session() != s {
		t.Fatal("a new session after a short blackhole")
	}
	if !c.TrustedNow(s) {
		t.Fatal("not trusted once Reconnected was reported")
	}

	c.Close()
	if c.TrustedNow(s) {
		t.Fatal("trusted after Close")
	}
}
