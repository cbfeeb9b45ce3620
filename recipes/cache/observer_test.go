package cache_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestObserverHearsEachChangeOfACachesTrust(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, 30*time.Second)
	v, err := cache.New(c, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	untrusted, err := v.Trust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	<-untrusted
	cut := v.Err()
	p.Restore()
	if _, err := v.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	want := []connection.ViewChange{
		{Recipe: "cache", Path: root, Trusted: true},
		{Recipe: "cache", Path: root, Trusted: false, Cause: cut},
		{Recipe: "cache", Path: root, Trusted: true},
	}
	zktest.Eventually(t, 5*time.Second, "the view's changes told", func() error {
		if got := rec.Views(); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("changes %+v, want %+v", got, want)
		}
		return nil
	})
	if !errors.Is(cut, cache.ErrSuspended) {
		t.Errorf("trust ended with %v, want suspended", cut)
	}
	v.Close()
	if got := rec.Views(); len(got) != 4 || got[3].Trusted || !errors.Is(got[3].Cause, cache.ErrClosed) {
		t.Errorf("after Close: %+v, want the trust ended by the close", got)
	}
}
