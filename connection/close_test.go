package connection_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// manyNodes creates n children of parent with long names, in
// transactions of a hundred, and returns their paths: enough of them
// make a re-registration of their watches, or their reads in bulk,
// megabytes long.
func manyNodes(t *testing.T, conn *zk.Conn, parent string, n int) []string {
	t.Helper()
	if _, err := conn.Create(parent, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 230)
	var paths []string
	var reqs []any
	for i := range n {
		p := fmt.Sprintf("%s/%s-%05d", parent, long, i)
		paths = append(paths, p)
		reqs = append(reqs, &zk.CreateRequest{Path: p, Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 100 || i == n-1 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	return paths
}

// goroutinesIn returns the stacks of the goroutines with fn on their
// stack.
func goroutinesIn(fn string) []string {
	buf := make([]byte, 16<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, fn) {
			out = append(out, g)
		}
	}
	return out
}

// TestCloseWaitsForStuckWriter: the client's own writer — the goroutine
// that writes the tracker's requests, here the re-registration of 8,000
// watches of a sink (2 MB) after a reconnect — is blocked in its write:
// the server stopped reading right after the handshake (paused). Close
// ends the connection and returns only once that write has returned and
// the writer is gone, within go-zookeeper's bound on the close (a
// second, two more if its queue is full).
//
// Not parallel: no other test's client runs while it looks for the
// writer among all goroutines.
func TestCloseWaitsForStuckWriter(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(1)) // its own: the test pauses it
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	paths := manyNodes(t, conn, "/stuck", 4000)
	conn.Close()

	sn := &testkit.StallNet{}
	c := open(t, ens.Servers(), connection.WithDialer(sn.Dial), connection.WithSessionTimeout(20*time.Second))
	t.Cleanup(func() { ens.Resume(0) }) // first: the cleanups before it talk to the server
	ctx := ctxFor(t, time.Minute)
	sink := connx.Of(c).NewWatchSink(func(string, zk.Event) {})
	reads := make([]connx.BulkRead, len(paths))
	for i, p := range paths {
		reads[i] = connx.BulkRead{Path: p, Children: true}
	}
	if _, err := sink.ReadWatchMany(ctx, reads); err != nil {
		t.Fatal(err)
	}
	if n := c.Stats().PendingWatches; n < 2*len(paths) {
		t.Fatalf("%d watches pending, want %d", n, 2*len(paths))
	}

	// The connection drops; on the next one the server answers the
	// handshake and stops reading as the watches are sent again.
	sn.StopServerOn(func(b []byte) bool { return testkit.Opcode(b) == 101 }, func() error { return ens.Pause(0) })
	sn.Reset()
	select {
	case <-sn.Stopped():
		if err := sn.Err(); err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the watches were not sent again within a minute")
	}
	zktest.Eventually(t, 30*time.Second, "the client's write blocked", func() error {
		if d := sn.Blocked(); d < 500*time.Millisecond {
			return fmt.Errorf("the longest write in progress lasted %v", d)
		}
		return nil
	})

	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if d := sn.Blocked(); d > 0 {
		t.Fatalf("Close returned after %v while the client's write had been blocked for %v", took, d)
	}
	if gs := goroutinesIn("connection.(*trackedConn).flush"); len(gs) > 0 {
		t.Fatalf("Close returned after %v; the client's writer still runs:\n%s", took, strings.Join(gs, "\n\n"))
	}
	if took > 5*time.Second {
		t.Fatalf("Close took %v", took)
	}
	t.Logf("Close took %v", took)

	if err := c.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx, "/stuck"); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
}

// TestCloseLetsTheRequestsInFlightBeAnswered: creates whose callers gave
// up (their contexts ended, as an interrupted command's do) are still in
// flight — their answers delayed 200 ms — when Close is called on a
// connected client. Close lets the server answer them before it closes
// the handle: each is told with its answer, the node made, never with a
// closed handle. Under the race detector it also proves that a late
// answer is not decoded while the call that gave up reads it (go-zookeeper
// v1.0.4 returns from a call whose handle closes without waiting for its
// decoder).
func TestCloseLetsTheRequestsInFlightBeAnswered(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c, err := connection.Open(ctxFor(t, 30*time.Second), p.Servers(), connection.WithObserver(rec.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 20
	p.DelayReplies(200 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	for i := range n {
		go c.Create(ctx, fmt.Sprintf("%s/n-%02d", root, i), nil, connection.Persistent) //nolint:errcheck // given up below
	}
	zktest.Eventually(t, 10*time.Second, "every create sent", func() error {
		if got := len(requestsUnder(rec, root+"/n-")); got < n {
			return fmt.Errorf("%d of %d sent", got, n)
		}
		return nil
	})
	cancel()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range requestsUnder(rec, root+"/n-") {
		if len(r.Ends) != 1 || r.Ends[0].Err != nil {
			t.Errorf("%s %s: ends %+v, want one, answered", r.Begin.Op, r.Begin.Path, r.Ends)
		}
	}
	kids, _, err := ens.Conn(t).Children(root)
	if err != nil || len(kids) != n {
		t.Fatalf("%d nodes made (%v), want %d", len(kids), err, n)
	}
}
