package cache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestCancelledContexts: Trust, Sync and Listen give up with their
// context's error while the client is cut off, and the cache goes on:
// once the connection is back a Sync succeeds and the view equals the
// server's tree.
func TestCancelledContexts(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	makeTree(t, conn, root, 4, 3)
	proxy := ens.Proxy(t)
	client := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	c := newCache(t, client, root)
	done, err := c.Trust(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	<-done
	if _, err := conn.Set(root+"/a0", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		if _, err := c.Trust(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Trust while cut off: %v", err)
		}
		if err := c.Sync(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sync while cut off: %v", err)
		}
		lctx, lcancel := context.WithCancel(context.Background())
		ch, err := c.Listen(lctx)
		if err != nil {
			t.Fatal(err)
		}
		<-ch // the Resync
		lcancel()
		for range ch {
		}
		cancel()
	}
	proxy.Restore()
	ctx := ctxFor(t, 30*time.Second)
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatalf("the view differs from the server:\n%s", d)
	}
}
