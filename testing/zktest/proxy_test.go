package zktest_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// states records every session event of a client, in order.
type states chan zk.Event

func record() (states, func(*zk.Conn)) {
	ch := make(states, 1000)
	return ch, zk.WithEventCallback(func(ev zk.Event) {
		if ev.Type == zk.EventSession {
			select {
			case ch <- ev:
			default:
			}
		}
	})
}

// wait returns once the client reported want, failing after timeout.
func (s states) wait(t *testing.T, want zk.State, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-s:
			if ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v event within %v", want, timeout)
		}
	}
}

func TestProxyCut(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	events, cb := record()
	conn := connect(t, p.Servers(), 4*time.Second, cb)
	id := conn.SessionID()

	p.Cut()
	events.wait(t, zk.StateDisconnected, 2*time.Second)
	if _, _, err := conn.Get(root); err == nil {
		t.Fatal("Get through a cut proxy succeeded")
	}
	p.Restore()
	events.wait(t, zk.StateHasSession, 5*time.Second)
	if got := conn.SessionID(); got != id {
		t.Fatalf("session %x after a short cut, want the same %x", got, id)
	}
	if _, _, err := conn.Get(root); err != nil {
		t.Fatalf("Get after Restore: %v", err)
	}
}

func TestProxyShortBlackholeKeepsSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	events, cb := record()
	conn := connect(t, p.Servers(), 6*time.Second, cb)
	id := conn.SessionID()

	p.Blackhole()
	got := make(chan error, 1)
	go func() {
		_, _, err := conn.Get(root)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Get through a blackhole returned %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	p.Restore()
	<-got // the request was lost with its connection, or answered
	// Restore closes the link that lost bytes; the client reconnects. Wait
	// for the disconnect first: the channel still holds the first
	// connection's StateHasSession, which says nothing about the second.
	events.wait(t, zk.StateDisconnected, 5*time.Second)
	events.wait(t, zk.StateHasSession, 5*time.Second)
	if _, _, err := conn.Get(root); err != nil {
		t.Fatalf("Get after Restore: %v", err)
	}
	if conn.SessionID() != id {
		t.Fatalf("session changed after a blackhole shorter than its timeout")
	}
}

func TestProxyLongBlackholeExpiresSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	events, cb := record()
	conn := connect(t, p.Servers(), time.Second, cb)
	node := root + "/ephemeral"
	if _, err := conn.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	observer := connect(t, ens.Servers(), 10*time.Second)

	p.Blackhole()
	// The server expires the session for real: its ephemeral node goes.
	zktest.Eventually(t, 10*time.Second, "server expires the blackholed session", func() error {
		ok, _, err := observer.Exists(node)
		if err == nil && ok {
			return zk.ErrNodeExists
		}
		return err
	})
	p.Restore()
	events.wait(t, zk.StateExpired, 10*time.Second)
}

func TestProxyDelay(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	conn := connect(t, p.Servers(), 10*time.Second)

	const d = 150 * time.Millisecond
	p.Delay(d)
	start := time.Now()
	if _, _, err := conn.Get(root); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 2*d {
		t.Fatalf("round trip with Delay(%v) took %v, want at least %v", d, rtt, 2*d)
	}
	p.Restore()
	if _, _, err := conn.Get(root); err != nil {
		t.Fatalf("Get after Restore: %v", err)
	}
}

func TestProxyDropReplies(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	conn := connect(t, p.Servers(), 6*time.Second)
	observer := connect(t, ens.Servers(), 10*time.Second)

	p.DropReplies()
	got := make(chan error, 1)
	go func() {
		_, err := conn.Create(root+"/landed", nil, 0, zk.WorldACL(zk.PermAll))
		got <- err
	}()
	// The request reaches the server...
	zktest.Eventually(t, 5*time.Second, "create takes effect", func() error {
		_, _, err := observer.Get(root + "/landed")
		return err
	})
	// ...but its answer does not reach the client.
	select {
	case err := <-got:
		t.Fatalf("create answered through DropReplies: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	p.Restore()
	if err := <-got; err == nil {
		t.Fatal("create reported success although its answer was dropped")
	}
}
