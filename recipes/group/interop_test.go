package group_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCuratorGroupMember: a Go member and Curator's GroupMember in one
// group see each other with their data, a change of data, and leaving.
func TestCuratorGroupMember(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/members"
	c := open(t, ens.Servers())
	cur := peertest.CuratorGroup(t, ens.ConnectString(), dir, "java-1", "j")
	cur.Do("STARTED", "start")
	g := join(t, c, dir, "go-1", group.WithData([]byte("g")))
	sees(t, g, "go-1=g,java-1=j")
	curatorSees(t, cur, "go-1=g,java-1=j")
	if err := g.SetData(ctxFor(t, 10*time.Second), []byte("g2")); err != nil {
		t.Fatal(err)
	}
	curatorSees(t, cur, "go-1=g2,java-1=j")
	cur.Do("SET", "setdata j2")
	sees(t, g, "go-1=g2,java-1=j2")
	cur.Do("CLOSED", "close")
	sees(t, g, "go-1=g2")
}

// curatorSees waits until Curator's getCurrentMembers renders as want.
func curatorSees(t *testing.T, cur *peertest.Peer, want string) {
	t.Helper()
	zktest.Eventually(t, 20*time.Second, "Curator's members are "+want, func() error {
		if got := cur.Do("MEMBERS", "members"); got != want {
			return errorf("Curator's members %q", got)
		}
		return nil
	})
}

// TestKazooParty: a Go member in the KazooParty layout and Kazoo's Party
// in one directory see each other's ids; Curator-layout members there are
// no one's.
func TestKazooParty(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		layout  group.Layout
		shallow bool
	}{
		{"party", group.KazooParty, false},
		{"shallow", group.KazooShallowParty, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ens := shared.Ensemble(t)
			dir := ens.Root(t) + "/party"
			c := open(t, ens.Servers())
			py := peertest.KazooParty(t, ens.ConnectString(), dir, "py-1", tc.shallow)
			py.Do("JOINED", "join")
			g := join(t, c, dir, "go-1", group.WithLayout(tc.layout))
			sees(t, g, "go-1=go-1,py-1=py-1") // Kazoo's nodes hold the id
			kazooSees(t, py, "go-1,py-1")
			if tc.layout == group.KazooParty {
				// A Curator-layout member in a Party's directory: Kazoo's
				// Party does not count it, and neither does the group.
				join(t, c, dir, "curator-style")
				kazooSees(t, py, "go-1,py-1")
				sees(t, g, "go-1=go-1,py-1=py-1")
			}
			py.Do("LEFT", "leave")
			sees(t, g, "go-1=go-1")
			if err := g.Close(ctxFor(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			py.Do("JOINED", "join")
			kazooSees(t, py, "py-1")
		})
	}
}

func kazooSees(t *testing.T, py *peertest.Peer, want string) {
	t.Helper()
	zktest.Eventually(t, 20*time.Second, "Kazoo's members are "+want, func() error {
		if got := py.Do("MEMBERS", "members"); got != want {
			return errorf("Kazoo's members %q", got)
		}
		return nil
	})
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
