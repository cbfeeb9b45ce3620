package election_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCancelledObserveLeavesNothing: Observe calls cancelled on an election
// whose directory does not exist leave no goroutine behind, and the watch
// they share waits for the directory: one on the client and on the server,
// however many calls gave up, and it fires when a candidate comes.
// Not parallel: it looks at every goroutine of the process.
func TestCancelledObserveLeavesNothing(t *testing.T) {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/absent/election"
	c := open(t, ens.Servers())
	obs := newElection(t, c, path, "observer")
	ctx := ctxFor(t, time.Minute)
	before := goleak.IgnoreCurrent()
	const calls = 200
	for range calls {
		octx, cancel := context.WithCancel(ctx)
		changes := obs.Observe(octx)
		select {
		case <-changes: // no leader
		case <-time.After(10 * time.Second):
			t.Fatal("Observe delivered nothing")
		}
		cancel()
		for range changes {
		}
	}
	// Every Observe has returned (its channel is closed): a goroutine
	// started since and still running was left by its reads (before the
	// shared watch, one per call, parked on its watch channel) — unless it
	// is one of go-zookeeper's for a client of the test that reconnected.
	testkit.VerifyNoGoroutinesSince(t, before)
	if n := c.Stats().PendingWatches; n > 1 {
		t.Errorf("%d pending watches on the client after %d cancelled Observe calls, want at most 1", n, calls)
	}
	if n := testkit.ServerWatches(t, ens, c.Session().ID()); n > 1 {
		t.Errorf("%d watches of the observer's session on the server, want at most 1", n)
	}
	// The watch left behind fires once the directory is there.
	cand := newElection(t, open(t, ens.Servers()), path, "a")
	term, err := cand.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the shared watch fires", func() error {
		if n := c.Stats().PendingWatches; n != 0 {
			return fmt.Errorf("%d pending watches", n)
		}
		return nil
	})
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
