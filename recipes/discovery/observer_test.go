package discovery_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// viewsOf returns the views of recipe recorded so far.
func viewsOf(rec *testkit.Recorder, recipe string) []connection.ViewChange {
	var of []connection.ViewChange
	for _, v := range rec.Views() {
		if v.Recipe == recipe {
			of = append(of, v)
		}
	}
	return of
}

// TestObserverHearsARegistrationsPresenceAndAServiceCachesTrust: a
// Registration's presence periods are told as views of Recipe
// "discovery" at the instance's path, and a ServiceCache's trust as its
// cache's; a cut ends each once, suspended, and each Close ends the last.
func TestObserverHearsARegistrationsPresenceAndAServiceCachesTrust(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, time.Minute)
	d := newDiscovery(t, c, root+"/services")
	r := register(t, d, discovery.Instance{Name: "web", ID: "a1", Address: "10.0.0.1", Port: 8080})
	sc := newCache(t, d, "web")
	if _, err := r.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	untrusted, cacheUntrusted := r.Untrusted(), sc.Untrusted()
	p.Cut()
	<-untrusted
	<-cacheUntrusted
	cut, cacheCut := r.Err(), sc.Err()
	p.Restore()
	if _, err := r.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sc.Close()

	got := viewsOf(rec, "discovery")
	path := r.Path()
	if len(got) != 4 || fmt.Sprint(got[:3]) != fmt.Sprint([]connection.ViewChange{
		{Recipe: "discovery", Path: path, Trusted: true},
		{Recipe: "discovery", Path: path, Cause: cut},
		{Recipe: "discovery", Path: path, Trusted: true},
	}) || got[3].Trusted || got[3].Path != path || !errors.Is(got[3].Cause, node.ErrClosed) {
		t.Errorf("registration's views %+v, want trusted, cut, trusted, closed at %s", got, path)
	}
	if !errors.Is(cut, node.ErrSuspended) {
		t.Errorf("registration's presence ended by the cut with %v, want suspended", cut)
	}
	zktest.Eventually(t, 5*time.Second, "the service cache's trust told", func() error {
		got := viewsOf(rec, "cache")
		if len(got) != 4 || !got[0].Trusted || got[1].Trusted || got[1].Cause != cacheCut || !got[2].Trusted ||
			got[3].Trusted || !errors.Is(got[3].Cause, cache.ErrClosed) {
			return fmt.Errorf("cache views %+v, want trusted, cut, trusted, closed", got)
		}
		return nil
	})
	if !errors.Is(cacheCut, cache.ErrSuspended) {
		t.Errorf("service cache's trust ended by the cut with %v, want suspended", cacheCut)
	}
}
