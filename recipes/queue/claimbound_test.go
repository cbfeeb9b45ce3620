package queue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestClaimWhoseBoundRunsOutLinesUpAgain tests the claim's own bound
// (2 × the session timeout) running out while Take's context lives: for
// 15 s, every create of a taken node the client writes has its answer
// lost (the proxy drops the server's replies from that create on, for a
// second, then closes the connection: the create applies, and the client
// comes back in the same session), so no claim can finish, and the
// claims' 12 s bound runs out. Take must not fail, nor spin (requests
// counted on the wire), and must end with the item, once, with no other
// taken node and no place in line left behind.
func TestClaimWhoseBoundRunsOutLinesUpAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path, ctx, obs := queueAndObserver(t, ens, 2*time.Minute)
	p := testkit.CountingProxy(t, ens.Servers())
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	sess := c.Session()
	var (
		mu       sync.Mutex
		states   []connection.State
		began    time.Time
		dropping bool
		armed    bool // once the worker waits in line: creates of directories go first
		relined  int  // places in line taken after the first create (create2)
		drops    int
		wireFrom zkserver.Wire
	)
	go func() {
		for s := range c.Listen(ctx) {
			mu.Lock()
			states = append(states, s)
			mu.Unlock()
		}
	}()
	const opCreate = 1 // a taken node's (places in line are create2)
	const opCreate2 = 15
	zkserver.LogWire(p, func(ev zkserver.WireEvent) {
		if ev.ToServer && ev.Op == opCreate2 {
			mu.Lock()
			if !began.IsZero() {
				relined++
			}
			mu.Unlock()
		}
		if !ev.ToServer || ev.Op != opCreate {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !armed {
			return
		}
		if began.IsZero() {
			began = time.Now()
			wireFrom = zkserver.ProxyWire(p)
		}
		if dropping || time.Since(began) > 15*time.Second {
			return
		}
		dropping = true
		drops++
		p.DropReplies()
		go func() {
			time.Sleep(time.Second)
			p.Restore()
			mu.Lock()
			dropping = false
			mu.Unlock()
		}()
	})
	defer zkserver.LogWire(p, nil)
	q := newQueue(t, c, path)
	ch := takeAsync(ctx, q)
	waitIdle(t, ctx, q, 1)
	mu.Lock()
	armed = true
	mu.Unlock()
	putter := newQueue(t, open(t, ens.Servers()), path)
	if err := putter.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	tk := <-ch
	mu.Lock()
	took := time.Since(began)
	wire := zkserver.ProxyWire(p).Sub(wireFrom)
	t.Logf("take over %v after its first create (a claim's bound: 12 s), %d spells of lost answers, %d places in line taken again; on the wire meanwhile %d requests, %d replies, %d pings; states %v",
		took.Round(time.Millisecond), drops, relined, wire.Requests, wire.Replies, wire.Pings, states)
	mu.Unlock()
	if c.Session() != sess {
		t.Skip("the session did not survive: the run shows nothing")
	}
	if tk.err != nil {
		t.Fatalf("Take = %v; want the item", tk.err)
	}
	if string(tk.it.Data()) != "x" {
		t.Fatalf("took %q", tk.it.Data())
	}
	if relined == 0 {
		t.Log("the take never lined up again: the claim's bound did not run out in this run")
	}
	if wire.Requests > 300 {
		t.Errorf("%d requests in %v: a loop", wire.Requests, took)
	}
	if err := tk.it.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 15*time.Second, "nothing left", func() error {
		if err := leftBehind(t, obs, path, "/taken", "/takers", "/entries"); err != nil {
			return err
		}
		return nil
	})
}
