package node_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// TestObserverHearsEachPresenceOfAKeptNode: a Node's presence periods
// are told as a view of Recipe "node", trusted while the node is there;
// each end once, with the Node's own Err: suspended by a cut, deleted by
// someone else, closed.
func TestObserverHearsEachPresenceOfAKeptNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	other := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	path := root + "/kept"
	n, err := node.New(c, path, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	untrusted, err := n.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var causes []error
	p.Cut()
	<-untrusted
	causes = append(causes, n.Err())
	p.Restore()
	if untrusted, err = n.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	<-untrusted
	causes = append(causes, n.Err())
	if _, err := n.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	causes = append(causes, n.Err())

	want := []connection.ViewChange{
		{Recipe: "node", Path: path, Trusted: true},
		{Recipe: "node", Path: path, Cause: causes[0]},
		{Recipe: "node", Path: path, Trusted: true},
		{Recipe: "node", Path: path, Cause: causes[1]},
		{Recipe: "node", Path: path, Trusted: true},
		{Recipe: "node", Path: path, Cause: causes[2]},
	}
	if got := rec.Views(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("views %+v,\nwant %+v", got, want)
	}
	for i, w := range []error{node.ErrSuspended, node.ErrDeleted, node.ErrClosed} {
		if !errors.Is(causes[i], w) {
			t.Errorf("presence %d ended with %v, want %v", i, causes[i], w)
		}
	}
}

// TestObserverHearsATTLNodesPresence: a TTLNode is a kept node too.
func TestObserverHearsATTLNodesPresence(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, 30*time.Second)
	path := root + "/ttl"
	n, err := node.NewTTL(c, path, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.Views()
	if len(got) != 2 || got[0] != (connection.ViewChange{Recipe: "node", Path: path, Trusted: true}) ||
		got[1].Recipe != "node" || got[1].Trusted || got[1].Path != path || !errors.Is(got[1].Cause, node.ErrClosed) {
		t.Errorf("views %+v, want one presence, ended by Close", got)
	}
}
