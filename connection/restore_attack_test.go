package connection_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

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
