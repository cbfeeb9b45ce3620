package group_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestObserverHearsAMembersPresenceAndTheMembersView: a member's own node
// is told as a view of Recipe "group" at its path, the members' view as
// its cache's, at the group's path; a cut ends each once, suspended, and
// Close ends both.
func TestObserverHearsAMembersPresenceAndTheMembersView(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	dir := ens.Root(t) + "/workers"
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, time.Minute)
	g := join(t, c, dir, "a")
	if _, err := g.Cache().Trust(ctx); err != nil {
		t.Fatal(err)
	}
	self, view := g.Node().Untrusted(), g.Cache().Untrusted()
	p.Cut()
	<-self
	<-view
	selfCut, viewCut := g.Node().Err(), g.Cache().Err()
	p.Restore()
	if _, err := g.Node().Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Cache().Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}

	zktest.Eventually(t, 5*time.Second, "the views told", func() error {
		for _, tc := range []struct {
			recipe, path string
			cut, closed  error
		}{
			{"group", dir + "/a", selfCut, node.ErrClosed},
			{"cache", dir, viewCut, cache.ErrClosed},
		} {
			var got []connection.ViewChange
			for _, v := range rec.Views() {
				if v.Recipe == tc.recipe {
					got = append(got, v)
				}
			}
			if len(got) != 4 || fmt.Sprint(got[:3]) != fmt.Sprint([]connection.ViewChange{
				{Recipe: tc.recipe, Path: tc.path, Trusted: true},
				{Recipe: tc.recipe, Path: tc.path, Cause: tc.cut},
				{Recipe: tc.recipe, Path: tc.path, Trusted: true},
			}) || got[3].Trusted || got[3].Path != tc.path || !errors.Is(got[3].Cause, tc.closed) {
				return fmt.Errorf("%s views %+v, want trusted, cut, trusted, closed at %s", tc.recipe, got, tc.path)
			}
		}
		return nil
	})
	if !errors.Is(selfCut, connection.ErrSuspended) || !errors.Is(viewCut, cache.ErrSuspended) {
		t.Errorf("the cut ended the member's presence with %v and the view's trust with %v, want suspended", selfCut, viewCut)
	}
}
