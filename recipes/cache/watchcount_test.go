package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestWatchesMatchTheServerAfterChurn: two caches of overlapping trees on
// one client, with writers changing both (nodes remade at once among the
// changes), the connection cut and answers lost now and then (same
// session), and at last the session expires. At each pause, what the client and the caches count pending
// is what the server holds for the session: a data watch for every cached
// node, a child watch for every one (no bound on depth), none for a node
// gone. A watch the client counts and the server lacks is a change missed
// silently; one the server holds and the client forgot, a leak.
func TestWatchesMatchTheServerAfterChurn(t *testing.T) {
	testkit.SkipHeavy(t)
	skipReconnectsUnderRace(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	o := newOverlapping(t, ens, 600, 2*time.Millisecond, 4*time.Second)
	root, conn, branch, proxy, client := o.root, o.conn, o.branch, o.proxy, o.client
	wrs := o.wrs
	startWriters(wrs)
	defer finishWriters(t, wrs)
	sess := client.Session()
	all, br, cs, recs := o.cachesOfBoth(t)
	for round := range 8 {
		switch {
		case round == 7:
			// The session expires: every watch set again in the next.
			s := client.Session()
			proxy.Blackhole()
			<-s.Done()
			proxy.Restore()
		case round%3 == 1:
			proxy.Cut()
			time.Sleep(50 * time.Millisecond)
			proxy.Restore()
		case round%3 == 2:
			proxy.DropReplies()
			time.Sleep(50 * time.Millisecond)
			proxy.Restore()
		}
		for _, c := range cs {
			waitInit(t, c)
		}
		time.Sleep(200 * time.Millisecond)
		for _, wr := range wrs {
			wr.pause()
		}
		settleMany(t, nil, fmt.Sprintf("round %d", round), cs, recs, []int{-1, -1}, conn)
		zktest.Eventually(t, 10*time.Second, "watches as the server's", func() error {
			nAll, nBr := all.Snapshot().Len(), br.Snapshot().Len()
			data := testkit.ServerWatches(t, ens, client.Session().ID())
			if s := all.Stats(); int(s.Watches) != 2*nAll {
				return fmt.Errorf("cache of %s: %d watches pending for %d nodes", root, s.Watches, nAll)
			}
			if s := br.Stats(); int(s.Watches) != 2*nBr {
				return fmt.Errorf("cache of %s: %d watches pending for %d nodes", branch, s.Watches, nBr)
			}
			if data != nAll {
				return fmt.Errorf("server: %d data watches; %d nodes", data, nAll)
			}
			// The client counts a node and kind once, whether the caches'
			// watches of it are their tables' or Watches, one or both
			// (connection's TestPendingWatchesCountsANodeOnce).
			if p := client.Stats().PendingWatches; p != 2*nAll {
				return fmt.Errorf("client: %d pending; %d nodes, %d of them in %s", p, nAll, nBr, branch)
			}
			return nil
		})
		for _, wr := range wrs {
			wr.resume()
		}
	}
	if client.Session() == sess {
		t.Fatal("the same session after the expiry")
	}
}
