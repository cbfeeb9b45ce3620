package chaos_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/chaos"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestMain(m *testing.M) {
	chaos.MaybeParticipant() // the run starts this binary again as its participants
	goleak.VerifyTestMain(m)
}

// TestShortFaultRun is the short fault run of make test: 4 participants
// per recipe (mutex, naive lock, write side of the read/write lock, a
// semaphore of one lease, a leader election, a work queue of one item),
// run by participant processes of two to four participants each, sharing
// one client with 2 s sessions, half of the processes under each error
// policy, for 30 s (ZKRECIPES_FAULT_RUN sets another duration), on a
// 3-node ensemble whose nemesis injects every fault kind it has time for,
// the ones that lose answers first: answers lost while their requests
// apply, from the moment a participant releases, and answers slowed while
// releases have deadlines shorter than them; client blackholes, delays
// and drops, paused and killed servers, partitions between servers, and
// processes stopped with SIGSTOP in a critical section. Every promise is
// checked; the tables are logged. make chaos runs the same for longer.
//
// The ensemble's syncLimit is 400 ms and the clients are told so
// (WithServerLag): a client of a follower that lost its leader (a paused
// leader, here) hears answers for up to that long while the leader may
// expire its session. With ZooKeeper's 5 s default and 2 s sessions no
// client could know in time; docs/safety.md states the rule.
func TestShortFaultRun(t *testing.T) {
	zktest.SkipIfShort(t)
	d := 30 * time.Second
	if v := os.Getenv("ZKRECIPES_FAULT_RUN"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("ZKRECIPES_FAULT_RUN=%q: %v", v, err)
		}
	}
	const syncLimit = 400 * time.Millisecond
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithSyncLimit(syncLimit), zktest.WithServerPartitions())
	ens.RequireFaults(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %v", seed, d)
	ctx, cancel := context.WithTimeout(context.Background(), d+4*time.Minute)
	defer cancel()
	res, err := chaos.Run(ctx, chaos.Config{
		Ensemble:       ens,
		Exe:            os.Args[0],
		Root:           "/chaos",
		Participants:   4,
		Duration:       d,
		SessionTimeout: 2 * time.Second,
		ServerLag:      syncLimit + zktest.DefaultTickTime,
		Seed:           seed,
		Logf:           t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Table())
	for _, d := range res.Clients.Details {
		t.Log(d)
	}
	for _, r := range res.Recipes {
		for _, d := range r.Details {
			t.Log(r.Recipe + ": " + d)
		}
	}
	if v := res.Violations(); len(v) > 0 {
		t.Error("broken promises:\n" + strings.Join(v, "\n"))
	}
}
