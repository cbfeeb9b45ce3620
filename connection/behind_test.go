package connection_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestNoResumeOnAServerBehindWhatWasRead: go-zookeeper never sees a
// reply's zxid (hideZxid); the handshake's lastZxidSeen comes
// from the tracker. A follower cut off from the leader, behind what the
// client read, must refuse the client's reconnect (ZooKeeper's "Refusing
// session request ... as it has seen zxid"), and the client must come
// back on an up-to-date server and see what it wrote. It relies on
// raiseLastZxid putting the tracker's zxid into lastZxidSeen in place of
// go-zookeeper's (always 0).
func TestNoResumeOnAServerBehindWhatWasRead(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithSyncLimit(20*time.Second), zktest.WithServerPartitions())
	ens.RequireFaults(t)
	leader := ens.MustLeader(t)
	behind, other := (leader+1)%3, (leader+2)%3
	addrs := ens.Servers()
	up, err := zktest.NewProxy([]string{addrs[leader], addrs[other]})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	lag, err := zktest.NewProxy([]string{addrs[behind]})
	if err != nil {
		t.Fatal(err)
	}
	defer lag.Close()
	lag.Cut()
	root := ens.Root(t)
	c := open(t, append(up.Servers(), lag.Servers()...), connection.WithSessionTimeout(8*time.Second))
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/x", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	if err := ens.Isolate(behind); err != nil {
		t.Fatal(err)
	}
	// Written and read after the follower was cut off: it has not seen
	// them.
	for _, p := range []string{"/y", "/z"} {
		if _, err := c.Create(ctx, root+p, []byte("v"), connection.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Get(ctx, root+"/z"); err != nil {
		t.Fatal(err)
	}
	lag.Restore()
	up.Cut()
	zktest.Eventually(t, 6*time.Second, "the follower refuses the client", func() error {
		if tail := ens.LogTail(behind); !strings.Contains(tail, "Refusing session request for client") {
			return errNotYet
		}
		return nil
	})
	up.Restore()
	if err := ens.Heal(); err != nil {
		t.Fatal(err)
	}
	ok, _, err := c.Exists(ctx, root+"/z")
	if err != nil || !ok {
		t.Fatalf("after the reconnect: %s exists %v, %v", root+"/z", ok, err)
	}
	if s := c.Session(); s == nil {
		t.Fatal("no session")
	}
}

var errNotYet = errorString("not yet")

type errorString string

func (e errorString) Error() string { return string(e) }
