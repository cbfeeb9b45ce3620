package cache_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCloseNotHeldByStuckBulkRead: the cache's first load sends its
// reads in bulk (multiRead, 256 nodes each, sixteen at a time) on a
// connection whose server stopped reading as the first of them was sent
// (paused): they fill the socket buffers and the client's write blocks.
// The cache's Close returns at once all the same — its reads give up
// with its context — and the client's Close after it ends the stuck
// write.
func TestCloseNotHeldByStuckBulkRead(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(1)) // its own: the test pauses it
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	root := "/stuck"
	mustCreate(t, conn, root, nil)
	long := strings.Repeat("n", 230)
	var reqs []any
	for i := range 4000 {
		reqs = append(reqs, &zk.CreateRequest{Path: fmt.Sprintf("%s/%s-%05d", root, long, i), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 100 {
			if _, err := conn.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	conn.Close()

	sn := &testkit.StallNet{}
	sn.StopServerOn(func(b []byte) bool { return testkit.Opcode(b) == 22 }, func() error { return ens.Pause(0) })
	client := open(t, ens.Servers(), connection.WithDialer(sn.Dial), connection.WithSessionTimeout(20*time.Second))
	t.Cleanup(func() { ens.Resume(0) }) // first: the cleanups before it talk to the server
	c := newCache(t, client, root)
	select {
	case <-sn.Stopped():
		if err := sn.Err(); err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no read in bulk within a minute")
	}
	zktest.Eventually(t, 30*time.Second, "the client's write blocked", func() error {
		if d := sn.Blocked(); d < 500*time.Millisecond {
			return fmt.Errorf("the longest write in progress lasted %v", d)
		}
		return nil
	})

	start := time.Now()
	c.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the cache's Close took %v while the client's write was blocked", took)
	} else {
		t.Logf("the cache's Close took %v", took)
	}
	start = time.Now()
	client.Close()
	took := time.Since(start)
	if d := sn.Blocked(); d > 0 {
		t.Fatalf("the client's Close returned after %v while its write had been blocked for %v", took, d)
	}
	t.Logf("the client's Close took %v", took)
}
