package connection_test

import (
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
