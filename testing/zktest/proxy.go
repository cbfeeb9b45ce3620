package zktest

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// Proxy is a TCP proxy between clients and an ensemble, one loopback
// listener per server. Connect a client to Servers() instead of the
// ensemble's addresses to cut, blackhole or delay its traffic; Restore
// ends the fault. Its methods are safe for concurrent use.
//
// A blackhole drops bytes, so a connection that lost bytes is closed on
// Restore (as a real network would reset it); the client reconnects. The
// server hears nothing from a blackholed client, so a blackhole longer
// than the session timeout expires the session on the server.
type Proxy struct {
	p *zkserver.Proxy
}

// NewProxy starts a proxy in front of targets (host:port each); the
// caller must Close it.
func NewProxy(targets []string) (*Proxy, error) {
	p, err := zkserver.NewProxy(targets)
	if err != nil {
		return nil, err
	}
	return &Proxy{p: p}, nil
}

// Proxy starts a proxy in front of every server of the ensemble; it is
// closed when the test ends.
func (e *Ensemble) Proxy(t testing.TB) *Proxy {
	t.Helper()
	p, err := NewProxy(e.Servers())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Servers returns the proxy's addresses, one per server, in server order:
// the addresses to give the client under test.
func (p *Proxy) Servers() []string { return p.p.Servers() }

// Cut closes every proxied connection and refuses new ones until Restore.
func (p *Proxy) Cut() { p.p.Cut() }

// Blackhole keeps connections open (and accepts new ones) but delivers
// nothing in either direction until Restore. Longer than the session
// timeout, it expires the client's session on the server.
func (p *Proxy) Blackhole() { p.p.Blackhole() }

// DropReplies delivers what clients send but drops everything the servers
// answer, until Restore: requests take effect and their answers are lost,
// as when a connection breaks after a request was sent. Restore closes the
// connections that lost bytes and those that delivered a request since
// DropReplies, whose answer is lost whenever the server sends it.
func (p *Proxy) DropReplies() { p.p.DropReplies() }

// DropRequests drops everything clients send but delivers what the
// servers send, until Restore: the server hears nothing (not even pings)
// and expires the session after its timeout, while watch notifications
// still reach the client. Restore closes the connections that lost bytes.
func (p *Proxy) DropRequests() { p.p.DropRequests() }

// Delay delivers every byte d after it arrived, in both directions, so a
// request and its answer take at least 2d more. Delay(0) removes it.
func (p *Proxy) Delay(d time.Duration) { p.p.Delay(d) }

// DelayReplies delivers what clients send at once and what servers send d
// later: the server hears the client (its session stays alive), while
// every answer comes late. DelayReplies(0) removes it.
func (p *Proxy) DelayReplies(d time.Duration) { p.p.DelayReplies(d) }

// LastHeard returns when bytes of a client last reached a server through
// the proxy (the delay included): what the server last heard of it, the
// start of its session's timeout once the proxy goes silent. It is the
// zero time before any.
func (p *Proxy) LastHeard() time.Time { return p.p.LastHeard() }

// LastAnswered returns when the proxy last read bytes a server sent, before
// any delay: from then on, a reply held back by DelayReplies keeps its
// delay whatever DelayReplies says next. It is the zero time before any.
func (p *Proxy) LastAnswered() time.Time { return p.p.LastAnswered() }

// ExpireSession ends the last session a server granted to a client
// through the proxy, on the server, at once — as curator-test's
// KillSession does: the proxy attaches to the session with the ID and
// password it relayed and closes it. Its ephemeral nodes and watches go;
// the client hears that the session expired on its next contact with a
// server. It returns the session's ID, or an error matching ErrNoSession
// when no session went through the proxy.
func (p *Proxy) ExpireSession() (int64, error) { return p.p.ExpireSession() }

// Restore delivers traffic normally again, without delay, and closes the
// connections that lost bytes to a blackhole or a drop.
func (p *Proxy) Restore() { p.p.Restore() }

// Close stops the proxy and closes every connection. It is idempotent.
func (p *Proxy) Close() { p.p.Close() }
