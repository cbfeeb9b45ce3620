package chaos_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chaos"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Recipes is every lock recipe the run exercises.
var recipes = []chaos.Recipe{
	{Name: "mutex", New: func(c *connection.Client, path string) (chaos.Locker, error) { return mutex.New(c, path) }},
	{Name: "naive", New: func(c *connection.Client, path string) (chaos.Locker, error) { return naive.New(c, path) }},
	{Name: "rwlock-write", New: func(c *connection.Client, path string) (chaos.Locker, error) {
		rw, err := rwlock.New(c, path)
		if err != nil {
			return nil, err
		}
		return rw.WriteLock(), nil
	}},
	{Name: "semaphore-1", New: func(c *connection.Client, path string) (chaos.Locker, error) {
		s, err := semaphore.New(c, path, 1)
		return &leaseLocker{sem: s}, err
	}},
}

// leaseLocker is a semaphore of one lease as a lock.
type leaseLocker struct {
	sem   *semaphore.Semaphore
	lease *semaphore.Lease
}

func (l *leaseLocker) Lock(ctx context.Context) error {
	got, err := l.sem.Acquire(ctx, 1)
	if err == nil {
		l.lease = got[0]
	}
	return err
}

func (l *leaseLocker) Unlock(ctx context.Context) error {
	if l.lease == nil {
		return semaphore.ErrReleased
	}
	err := l.lease.Release(ctx)
	if err == nil || errors.Is(err, connection.ErrSessionLost) || errors.Is(err, semaphore.ErrReleased) {
		l.lease = nil
	}
	return err
}

func (l *leaseLocker) Done() <-chan struct{} { return l.lease.Done() }
func (l *leaseLocker) Token() int64          { return l.lease.Token() }

// TestShortFaultRun is the short fault run of make test: 6 participants
// per recipe (mutex, naive lock, write side of the read/write lock, a
// semaphore of one lease) with 2 s sessions, half under each error policy, for 20 s
// (ZKRECIPES_FAULT_RUN sets another duration), on a 3-node ensemble whose
// nemesis blackholes, delays and drops the traffic of participants,
// pauses servers and restarts the leader. Every promise is checked; the
// figures are logged.
//
// The ensemble's syncLimit is 400 ms and the clients are told so
// (WithServerLag): a client of a follower that lost its leader (a paused
// leader, here) hears answers for up to that long while the leader may
// expire its session. With ZooKeeper's 5 s default and 2 s sessions no
// client could know in time; docs/safety.md states the rule.
func TestShortFaultRun(t *testing.T) {
	zktest.SkipIfShort(t)
	d := 20 * time.Second
	if v := os.Getenv("ZKRECIPES_FAULT_RUN"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("ZKRECIPES_FAULT_RUN=%q: %v", v, err)
		}
	}
	const syncLimit = 400 * time.Millisecond
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithSyncLimit(syncLimit))
	ens.RequireFaults(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %v", seed, d)
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	reports, err := chaos.Run(ctx, chaos.Config{
		Ensemble:       ens,
		Root:           "/chaos",
		Recipes:        recipes,
		Participants:   6,
		Duration:       d,
		SessionTimeout: 2 * time.Second,
		ServerLag:      syncLimit + zktest.DefaultTickTime,
		Seed:           seed,
		Logf:           t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		t.Log(r)
		for _, d := range r.Details {
			t.Log(d)
		}
		if r.Holds == 0 {
			t.Errorf("%s: no hold in the whole run", r.Recipe)
		}
		if r.Violations() != 0 {
			t.Errorf("%s: %d overlaps, %d Lock calls returned nil on a lost hold, %d orphans", r.Recipe, r.Overlaps, r.LostOnReturn, r.Orphans)
		}
	}
}
