package connection_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestReconnectedAfterWatchesRestored: a change made while the client is
// cut off has fired the client's shared watches (data and child) by the
// time Reconnected is reported for the same session: go-zookeeper's
// re-registration of the watches was answered first.
func TestReconnectedAfterWatchesRestored(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	states := c.Listen(ctxFor(t, time.Minute))
	ctx := ctxFor(t, 30*time.Second)
	for round := range 3 {
		node := root + "/n"
		if round == 0 {
			if _, err := conn.Create(node, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		_, _, dw, err := c.GetWatch(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		_, _, cw, err := c.ChildrenWatch(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		sess := c.Session()
		p.Cut()
		expect(t, states, 5*time.Second, connection.Suspended)
		if _, err := conn.Set(node, []byte{byte(round)}, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(root+"/c", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(root+"/c", -1); err != nil {
			t.Fatal(err)
		}
		p.Restore()
		expect(t, states, 10*time.Second, connection.Reconnected)
		if c.Session() != sess {
			t.Fatal("a new session")
		}
		if !closed(dw.Done()) || !closed(cw.Done()) {
			t.Fatalf("round %d: Reconnected before the watches fired (data %v, child %v)", round, closed(dw.Done()), closed(cw.Done()))
		}
	}
}

// manyWatches creates n nodes under root with names of about 200 bytes,
// so that their watches fill several of go-zookeeper's 128 KB setWatches
// frames, and sets a shared data watch on each through c.
func manyWatches(t *testing.T, conn *zk.Conn, c *connection.Client, root string, n int) ([]string, []*connection.Watch) {
	t.Helper()
	pad := strings.Repeat("x", 200)
	paths := make([]string, n)
	var reqs []any
	for i := range n {
		paths[i] = fmt.Sprintf("%s/%s%05d", root, pad, i)
		reqs = append(reqs, &zk.CreateRequest{Path: paths[i], Data: []byte("v0"), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 200 || i == n-1 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	ctx := ctxFor(t, time.Minute)
	ws := make([]*connection.Watch, n)
	for i, p := range paths {
		_, _, w, err := c.GetWatch(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
	}
	return paths, ws
}

// TestReconnectedAfterWatchesRestoredOnSlowLink: Reconnected (same
// session) comes once the shared watches set before are registered again,
// so that a change made while cut off has fired its watch by then — also
// when the registration outlasts the safety net of two thirds of the
// session timeout. With more than 128 KB of watch paths go-zookeeper sends
// setWatches in several frames, one after another, each after the previous
// one's answer; on a link with a round trip of half a second (proxy Delay
// 250 ms each way) they take longer than that net, while the client's pings
// keep the silence low. So the safety net waits while a setWatches frame is
// in flight, and counts its patience from the last frame written or
// answered (tracker.restored): a recipe that trusts its view on Reconnected
// (the cache's Trusted) must not be wrong about the nodes changed during
// the cut.
func TestReconnectedAfterWatchesRestoredOnSlowLink(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(3*time.Second))
	paths, ws := manyWatches(t, conn, c, root, 3000) // ~830 KB of paths: 7 frames
	states := c.Listen(ctxFor(t, time.Minute))
	sid := c.Session().ID()
	p.Cut()
	expect(t, states, 5*time.Second, connection.Suspended)
	// Change every 10th node while cut off: their watches must have fired
	// by Reconnected, whichever frame names them.
	for i := 0; i < len(paths); i += 10 {
		if _, err := conn.Set(paths[i], []byte("v1"), -1); err != nil {
			t.Fatal(err)
		}
	}
	p.Delay(250 * time.Millisecond) // connections go through again, slowly
	at := time.Now()
	expect(t, states, 20*time.Second, connection.Reconnected)
	took := time.Since(at)
	if c.Session().ID() != sid {
		t.Skip("a new session: not the case under test")
	}
	var pending []int
	for i := 0; i < len(paths); i += 10 {
		if !closed(ws[i].Done()) {
			pending = append(pending, i)
		}
	}
	t.Logf("Reconnected %v after the link came back (slow)", took.Round(time.Millisecond))
	if len(pending) > 0 {
		t.Fatalf("Reconnected while %d of %d watches of nodes changed during the cut had not fired (e.g. node %d)",
			len(pending), len(paths)/10, pending[0])
	}
}

// TestReconnectedAfterSeveralSetWatchesFrames: with more than 128 KB of
// shared watch paths go-zookeeper sends setWatches in several frames, one
// after another. Reconnected (same session) comes once the last one is
// answered — every watch of a node changed during the cut has fired by
// then — and well before the safety net of two thirds of the session
// timeout.
func TestReconnectedAfterSeveralSetWatchesFrames(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	const timeout = 9 * time.Second
	c := open(t, p.Servers(), connection.WithSessionTimeout(timeout))
	paths, ws := manyWatches(t, conn, c, root, 3000) // ~830 KB of paths: 7 frames
	states := c.Listen(ctxFor(t, time.Minute))
	sid := c.Session().ID()
	for round := range 2 {
		p.Cut()
		expect(t, states, 10*time.Second, connection.Suspended)
		for i := round; i < len(paths); i += 10 {
			if _, err := conn.Set(paths[i], []byte("v1"), -1); err != nil {
				t.Fatal(err)
			}
		}
		p.Restore()
		at := time.Now()
		expect(t, states, 20*time.Second, connection.Reconnected)
		took := time.Since(at)
		if c.Session().ID() != sid {
			t.Fatal("a new session")
		}
		var pending []int
		for i := round; i < len(paths); i += 10 {
			if !closed(ws[i].Done()) {
				pending = append(pending, i)
			}
		}
		if len(pending) > 0 {
			t.Fatalf("round %d: Reconnected while %d watches of changed nodes had not fired (e.g. node %d)", round, len(pending), pending[0])
		}
		// go-zookeeper waits a second before it reconnects to a single
		// server; the safety net would answer at 1 s + 6 s.
		t.Logf("round %d: Reconnected %v after the restore", round, took.Round(time.Millisecond))
		if took > 1*time.Second+timeout*2/3 {
			t.Fatalf("round %d: Reconnected only after %v: the safety net, not the frames", round, took)
		}
		// The fired watches are set again for the next round.
		ctx := ctxFor(t, time.Minute)
		for i := range paths {
			if closed(ws[i].Done()) {
				_, _, w, err := c.GetWatch(ctx, paths[i])
				if err != nil {
					t.Fatal(err)
				}
				ws[i] = w
			}
		}
	}
}

// TestReconnectedWithEveryKindOfWatch: shared watches of every kind and
// filing — a data watch, a child watch, an exists watch on a node that
// exists (go-zookeeper files it as a data watch) and one on a node that
// does not (an exists watch) — and a client with no watch at all. After a
// cut during which each watched node changes, Reconnected comes with
// every watch fired, as soon as go-zookeeper's reconnect allows (it waits a
// second before it reconnects to a single server), never at the safety net.
func TestReconnectedWithEveryKindOfWatch(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := ens.Proxy(t)
	const timeout = 9 * time.Second
	c := open(t, p.Servers(), connection.WithSessionTimeout(timeout))
	bare := open(t, p.Servers(), connection.WithSessionTimeout(timeout))
	ctx := ctxFor(t, time.Minute)
	for _, n := range []string{"/data", "/dir", "/there"} {
		if _, err := conn.Create(root+n, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	states := c.Listen(ctxFor(t, time.Minute))
	bareStates := bare.Listen(ctxFor(t, time.Minute))
	for round := range 3 {
		_, _, dw, err := c.GetWatch(ctx, root+"/data")
		if err != nil {
			t.Fatal(err)
		}
		_, _, cw, err := c.ChildrenWatch(ctx, root+"/dir")
		if err != nil {
			t.Fatal(err)
		}
		ok, _, tw, err := c.ExistsWatch(ctx, root+"/there")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		ok, _, aw, err := c.ExistsWatch(ctx, root+"/absent")
		if err != nil || ok {
			t.Fatal(ok, err)
		}
		p.Cut()
		expect(t, states, 10*time.Second, connection.Suspended)
		expect(t, bareStates, 10*time.Second, connection.Suspended)
		if _, err := conn.Set(root+"/data", []byte{byte(round)}, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(root+"/dir/c", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(root+"/dir/c", -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Set(root+"/there", []byte{byte(round)}, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(root+"/absent", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		p.Restore()
		at := time.Now()
		expect(t, states, 20*time.Second, connection.Reconnected)
		took := time.Since(at)
		for name, w := range map[string]*connection.Watch{"data": dw, "children": cw, "exists (data)": tw, "exists (creation)": aw} {
			if !closed(w.Done()) {
				t.Errorf("round %d: Reconnected before the %s watch fired", round, name)
			}
		}
		expect(t, bareStates, 20*time.Second, connection.Reconnected)
		bareTook := time.Since(at)
		t.Logf("round %d: Reconnected %v after the restore (no watches: %v)", round, took.Round(time.Millisecond), bareTook.Round(time.Millisecond))
		if took > 1500*time.Millisecond+timeout*2/3 {
			t.Fatalf("round %d: Reconnected after %v: the safety net", round, took)
		}
		if err := conn.Delete(root+"/absent", -1); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatchdogResumeIsPrompt: the watchdog suspends a connection whose
// answers come late (go-zookeeper keeps it: no new handshake, no
// setWatches); when they come on time again, Reconnected follows at once,
// not after the safety net.
func TestWatchdogResumeIsPrompt(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	const timeout = 6 * time.Second
	c := open(t, p.Servers(), connection.WithSessionTimeout(timeout))
	ctx := ctxFor(t, time.Minute)
	if _, _, _, err := c.ChildrenWatch(ctx, root); err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctxFor(t, time.Minute))
	for round := range 2 {
		p.DelayReplies(3 * time.Second) // silence of 3 s + a ping interval: beyond 4 s
		expect(t, states, 15*time.Second, connection.Suspended)
		p.Restore()
		at := time.Now()
		expect(t, states, 15*time.Second, connection.Reconnected)
		took := time.Since(at)
		t.Logf("round %d: Reconnected %v after the delay ended", round, took.Round(time.Millisecond))
		if took > 3*time.Second+timeout/3 {
			t.Fatalf("round %d: Reconnected %v after the delay ended", round, took)
		}
	}
}
