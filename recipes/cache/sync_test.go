package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestSyncWaitsForChangeNotifiedByBulkRead: a bulk read sets its watches
// after its data is read, so a change made in between is notified by the
// watch, not seen by the read. A Sync answered while that bulk read is in
// flight must wait for the notification's read: a change committed
// before Sync was called is in the view when it returns.
func TestSyncWaitsForChangeNotifiedByBulkRead(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	client := open(t, p.Servers())
	conn := ens.Conn(t)
	dir := root + "/d"
	mustCreate(t, conn, dir, nil)
	c := newCache(t, client, dir, cache.WithMaxDepth(1))
	waitInit(t, c)
	// Replies come late; requests reach the server at once, so the bulk
	// read's data is read at once and its watches set a delay later.
	p.DelayReplies(150 * time.Millisecond)
	ctx := ctxFor(t, 2*time.Minute)
	const rounds, kids = 5, 20
	for round := range rounds {
		var ops []any
		for i := range kids {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/r%d-c%02d", dir, round, i), Data: []byte("v1"), Acl: zk.WorldACL(zk.PermAll)})
		}
		before := c.Stats().Reads
		if _, err := conn.Multi(ops...); err != nil {
			t.Fatal(err)
		}
		// The listing shows the new children; their reads go in bulk.
		zktest.Eventually(t, 10*time.Second, "the bulk read of the new children is sent", func() error {
			if n := c.Stats().Reads - before; n < kids {
				return fmt.Errorf("%d reads since the multi", n)
			}
			return nil
		})
		first := fmt.Sprintf("%s/r%d-c00", dir, round)
		if _, err := conn.Set(first, []byte("v2"), -1); err != nil {
			t.Fatal(err)
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if n, ok := c.Get(first); !ok || string(n.Data) != "v2" {
			t.Fatalf("round %d: %s after Sync: %q (in view: %v); the set committed before Sync was called gave v2", round, first, n.Data, ok)
		}
	}
}
