package partition_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// kazooNode is the name of a Kazoo Lock's node.
var kazooNode = regexp.MustCompile(`^[0-9a-f]{32}__lock__\d{10}$`)

// kazooAcquired reads the Kazoo partitioner's state lines until it says
// it holds want (its Kazoo split), and returns them.
func kazooAcquired(t *testing.T, k *peertest.Peer, want []string) {
	t.Helper()
	line := "ACQUIRED " + strings.Join(want, ",")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		got := k.Expect("STATE", time.Until(deadline))
		if strings.TrimSpace(got) == strings.TrimSpace(line) {
			return
		}
		if strings.HasPrefix(got, "FAILURE") {
			t.Fatalf("Kazoo's partitioner failed")
		}
	}
	t.Fatalf("Kazoo never said %q", line)
}

// kazooHolds checks the server: each of items is held by a Kazoo lock
// node, and none of them by a node of ours.
func kazooHolds(t *testing.T, obs *zk.Conn, dir string, items []string) {
	t.Helper()
	first, err := holders(obs, dir, items)
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range items {
		if !kazooNode.MatchString(first[item]) {
			t.Errorf("%s: Kazoo says it holds it, the server's first contender is %q", item, first[item])
		}
	}
}

// TestKazooSetPartitioner: a Go partitioner and Kazoo's SetPartitioner
// share one set in one party: each holds its Kazoo split, the server
// shows Kazoo's items held by Kazoo's lock nodes and ours by ours; when
// Kazoo finishes, the Go member takes the whole set; a second Kazoo
// member joins and is killed (its session left to expire): the Go member
// never holds its items before the server deletes its nodes, and then
// takes them.
func TestKazooSetPartitioner(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/work"
	obs := ens.Conn(t)
	items := itemsN(6)
	g := start(t, open(t, ens.Servers()), dir, "go-1", items)
	k1 := peertest.KazooPartitioner(t, ens.ConnectString(), dir, "py-1", items, time.Second)
	members := []string{"go-1", "py-1"}
	kazooAcquired(t, k1, partition.KazooSplit("py-1", members, items))
	settledWith(t, obs, dir, items, g, members)
	kazooHolds(t, obs, dir, partition.KazooSplit("py-1", members, items))

	k1.Do("FINISHED", "finish")
	settled(t, obs, dir, items, []*member{g}, 30*time.Second)

	ck := startChecker(obs, dir, items, func() []*member { return []*member{g} })
	k2 := peertest.KazooPartitioner(t, ens.ConnectString(), dir, "py-2", items, time.Second)
	members = []string{"go-1", "py-2"}
	kazooAcquired(t, k2, partition.KazooSplit("py-2", members, items))
	settledWith(t, obs, dir, items, g, members)
	kazooHolds(t, obs, dir, partition.KazooSplit("py-2", members, items))
	k2.Kill()
	settled(t, obs, dir, items, []*member{g}, 60*time.Second) // after Kazoo's session timeout
	ck.finish(t)
}

// settledWith waits until the Go member holds its split among members
// (Kazoo's members included) and the server shows them held by its nodes.
func settledWith(t *testing.T, obs *zk.Conn, dir string, items []string, g *member, members []string) {
	t.Helper()
	want := partition.KazooSplit(g.id, members, items)
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		last = func() string {
			s := g.current()
			if s == nil {
				return "no share"
			}
			if !slices.Equal(s.Names(), want) {
				return fmt.Sprintf("holds %v, want %v", s.Names(), want)
			}
			first, err := holders(obs, dir, items)
			if err != nil {
				return err.Error()
			}
			for _, it := range s.Items() {
				if first[it.Name] != it.Node[strings.LastIndex(it.Node, "/")+1:] {
					return fmt.Sprintf("%s: first contender %q", it.Name, first[it.Name])
				}
			}
			return ""
		}()
		if last == "" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the Go member never held its split: %s", last)
}
