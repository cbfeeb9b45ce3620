package testkit

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Lagging is a 3-server ensemble of the test's own whose follower can be
// held behind its leader: the links between servers go through proxies
// (zktest.WithServerPartitions), and the sync limit is long enough that a
// slowed follower stays in the quorum.
type Lagging struct {
	*zktest.Ensemble
	Leader, Follower []string // the leader's address; a follower's
}

// NewLagging starts a Lagging ensemble; the test skips under -short and
// where faults cannot be injected.
func NewLagging(t *testing.T) *Lagging {
	t.Helper()
	zktest.SkipIfShort(t)
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithSyncLimit(20*time.Second), zktest.WithServerPartitions())
	ens.RequireFaults(t)
	leader := ens.MustLeader(t)
	addrs := ens.Servers()
	follower := (leader + 1) % 3
	return &Lagging{Ensemble: ens, Leader: addrs[leader : leader+1], Follower: addrs[follower : follower+1]}
}

// Lag delays every link between the servers by d, until the test ends or
// Lag(t, 0).
func (l *Lagging) Lag(t *testing.T, d time.Duration) {
	t.Helper()
	if err := l.DelayServerLinks(d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.DelayServerLinks(0) })
}

// OnLeader connects a raw client to the leader, connected when it
// returns, closed when the test ends.
func (l *Lagging) OnLeader(t *testing.T) *zk.Conn {
	t.Helper()
	conn, err := zktest.Connect(l.Leader, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if _, _, err := conn.Exists("/"); err != nil {
		t.Fatal(err)
	}
	return conn
}
