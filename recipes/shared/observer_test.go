package shared_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestObserverHearsAWatchersTrustAsItsCaches: a shared value's Watcher is
// a cache of the value's node, and its trust is told as that cache's: at
// the value's path, ended once by a cut, and by Close.
func TestObserverHearsAWatchersTrustAsItsCaches(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	path := ens.Root(t) + "/count"
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	ctx := ctxFor(t, 30*time.Second)
	count, err := shared.NewCount(c, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := count.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	untrusted := w.Untrusted()
	p.Cut()
	<-untrusted
	p.Restore()
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	zktest.Eventually(t, 5*time.Second, "the watcher's trust told", func() error {
		got := rec.Views()
		if len(got) != 4 || !got[0].Trusted || got[1].Trusted || !errors.Is(got[1].Cause, cache.ErrSuspended) || !got[2].Trusted ||
			got[3].Trusted || !errors.Is(got[3].Cause, cache.ErrClosed) {
			return fmt.Errorf("views %+v, want trusted, cut, trusted, closed", got)
		}
		for _, v := range got {
			if v.Recipe != "cache" || v.Path != path {
				return fmt.Errorf("view %+v, want the cache of %s", v, path)
			}
		}
		return nil
	})
}
