package otelzk_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// TestViewTrustedThenClosedIsCountedTrustedThenUntrusted: a cache is
// counted trusted from its first full load to its close, and its close
// counted as an end of trust, closed.
func TestViewTrustedThenClosedIsCountedTrustedThenUntrusted(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	tel := newTelemetry(t)
	c := testkit.Open(t, ens.Servers(), connection.WithObserver(tel.observer))
	ctx := testkit.Ctx(t, 30*time.Second)
	v, err := cache.New(c, root+"/config")
	if err != nil {
		t.Fatal(err)
	}
	untrusted, err := v.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := tel.sum(t, "zkrecipes.view.trusted", "{view}", false); fmt.Sprint(got) != "map[zkrecipes.recipe=cache:1]" {
		t.Errorf("views trusted %v, want the cache", got)
	}
	if got := tel.sum(t, "zkrecipes.view.untrusted", "{view}", true); len(got) != 0 {
		t.Errorf("ends of trust %v, want none yet", got)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if !testkit.Closed(untrusted) || !errors.Is(v.Err(), cache.ErrClosed) {
		t.Fatalf("a closed cache: untrusted closed %v, Err %v", testkit.Closed(untrusted), v.Err())
	}
	if got := tel.sum(t, "zkrecipes.view.trusted", "{view}", false); fmt.Sprint(got) != "map[zkrecipes.recipe=cache:0]" {
		t.Errorf("views trusted %v, want none", got)
	}
	if got := tel.sum(t, "zkrecipes.view.untrusted", "{view}", true); fmt.Sprint(got) != "map[zkrecipes.cause=closed,zkrecipes.recipe=cache:1]" {
		t.Errorf("ends of trust %v, want the cache's, closed", got)
	}
}

// TestKeptNodesPresenceIsCountedAsAView: a kept node's presence is a view
// of recipe "node"; its deletion by someone else ends it as node_deleted,
// its Close as closed.
func TestKeptNodesPresenceIsCountedAsAView(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/kept"
	tel := newTelemetry(t)
	c := testkit.Open(t, ens.Servers(), connection.WithObserver(tel.observer))
	other := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	n, err := node.New(c, path, nil)
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
	if err := other.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	<-untrusted
	if _, err := n.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tel.sum(t, "zkrecipes.view.trusted", "{view}", false); fmt.Sprint(got) != "map[zkrecipes.recipe=node:0]" {
		t.Errorf("views trusted %v, want none", got)
	}
	want := "map[zkrecipes.cause=closed,zkrecipes.recipe=node:1 zkrecipes.cause=node_deleted,zkrecipes.recipe=node:1]"
	if got := tel.sum(t, "zkrecipes.view.untrusted", "{view}", true); fmt.Sprint(got) != want {
		t.Errorf("ends of trust %v, want %s", got, want)
	}
}
