package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/lease"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// kazooNow is a time as the Kazoo driver takes it for utcnow.
func kazooNow(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }

// TestLeaseSharedWithKazoo: a lease obtained by Go is refused to another
// Kazoo holder and renewed by Kazoo under the same identifier, and the
// reverse.
func TestLeaseSharedWithKazoo(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, 2*time.Minute)
	kz := peertest.KazooLease(t, ens.ConnectString())
	now := time.Now().UTC()
	clk := clockAt(now)

	path := root + "/go-first"
	if _, err := lease.Obtain(ctx, c, path, time.Hour, as("svc-go"), clk.opt()); err != nil {
		t.Fatal(err)
	}
	kz.Do("LEASE False", "lease %s 3600 svc-py %s", path, kazooNow(now))
	kz.Do("LEASE True", "lease %s 7200 svc-go %s", path, kazooNow(now))
	rec, err := lease.Current(ctx, c, path)
	if want := now.Add(2 * time.Hour).Truncate(time.Second); err != nil || rec.Holder != "svc-go" || !rec.End.Equal(want) {
		t.Fatalf("after Kazoo's renewal: %+v, %v; want svc-go until %v", rec, err, want)
	}

	path = root + "/kazoo-first"
	kz.Do("LEASE True", "lease %s 60 svc-py %s", path, kazooNow(now))
	_, err = lease.Obtain(ctx, c, path, time.Hour, as("svc-go"), clk.opt())
	wantHeld(t, err)
	if _, err := lease.Obtain(ctx, c, path, time.Hour, as("svc-py"), clk.opt()); err != nil {
		t.Fatalf("Go renewing Kazoo's lease under its identifier: %v", err)
	}
	clk.set(now.Add(2 * time.Hour))
	if _, err := lease.Obtain(ctx, c, path, time.Hour, as("svc-go"), clk.opt()); err != nil {
		t.Fatalf("after the end: %v", err)
	}
	kz.Do("LEASE False", "lease %s 60 svc-py %s", path, kazooNow(now.Add(2*time.Hour)))
}

// TestRecordBytesAsKazooWrites: for the same identifier, clock and
// duration, Go and Kazoo write the same bytes.
func TestRecordBytesAsKazooWrites(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, 2*time.Minute)
	kz := peertest.KazooLease(t, ens.ConnectString())
	now := time.Date(2026, 12, 7, 12, 34, 56, 789_000_000, time.UTC)
	for i, id := range []string{"host-1", "café-日本", `quote"back\slash`, "emoji-😀"} {
		kpath, gpath := fmt.Sprintf("%s/k%d", root, i), fmt.Sprintf("%s/g%d", root, i)
		kz.Do("LEASE True", "lease %s 4000.5 %s %s", kpath, id, kazooNow(now))
		if _, err := lease.Obtain(ctx, c, gpath, 4000500*time.Millisecond, as(id), lease.WithClock(func() time.Time { return now })); err != nil {
			t.Fatal(err)
		}
		kb, _, err := obs.Get(kpath + "/lease_holder")
		if err != nil {
			t.Fatal(err)
		}
		gb, _, err := obs.Get(gpath + "/lease_holder")
		if err != nil {
			t.Fatal(err)
		}
		if string(kb) != string(gb) {
			t.Fatalf("%q: Kazoo wrote %s\n      Go wrote %s", id, kb, gb)
		}
	}
}

// TestMultiLeaseSharedWithKazoo: Go's ObtainOneOf and Kazoo's
// MultiNonBlockingLease fill the same slots.
func TestMultiLeaseSharedWithKazoo(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, 2*time.Minute)
	kz := peertest.KazooLease(t, ens.ConnectString())
	path := root + "/pool"
	l, err := lease.ObtainOneOf(ctx, c, path, 3, time.Hour, as("g1"))
	if err != nil || l.Path() != path+"/0" {
		t.Fatalf("g1: %v, %v", l, err)
	}
	kz.Do("LEASE True", "multilease 3 %s 3600 k1", path)
	if l, err = lease.ObtainOneOf(ctx, c, path, 3, time.Hour, as("g2")); err != nil || l.Path() != path+"/2" {
		t.Fatalf("g2: %v, %v; want slot 2", l, err)
	}
	kz.Do("LEASE False", "multilease 3 %s 3600 k2", path)
	_, err = lease.ObtainOneOf(ctx, c, path, 3, time.Hour, as("g3"))
	wantHeld(t, err)
	if rec, err := lease.Current(ctx, c, path+"/1"); err != nil || rec.Holder != "k1" {
		t.Fatalf("slot 1: %+v, %v; want k1", rec, err)
	}
}

// TestKazooAndGoTakersOneWins: Kazoo and two Go clients trying at once
// for a lease: one obtains it, in every round. The Go takers start a
// little later in each round than the last, so that the rounds cover
// Kazoo ahead of them, beside them and behind them.
func TestKazooAndGoTakersOneWins(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, 2*time.Minute)
	c2 := testkit.Open(t, ens.Servers())
	kz := peertest.KazooLease(t, ens.ConnectString())
	kazooWins := 0
	for round := 0; round < 10; round++ {
		path := fmt.Sprintf("%s/r%d", root, round)
		kz.Send("lease %s 3600 kazoo", path)
		stagger := time.After(time.Duration(round) * 2 * time.Millisecond)
		<-stagger
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i, client := range []*struct{ id string }{{"go-a"}, {"go-b"}} {
			cl := c
			if i == 1 {
				cl = c2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := lease.Obtain(ctx, cl, path, time.Hour, as(client.id))
				switch {
				case err == nil:
					mu.Lock()
					won++
					mu.Unlock()
				case !errors.Is(err, lease.ErrHeld):
					t.Errorf("%s: %v", client.id, err)
				}
			}()
		}
		wg.Wait()
		kzWon := kz.Expect("LEASE ", 30*time.Second) == "True"
		if kzWon {
			kazooWins++
			won++
		}
		if won != 1 {
			t.Fatalf("round %d: %d obtained the lease, want 1", round, won)
		}
	}
	t.Logf("Kazoo obtained the lease in %d of 10 rounds", kazooWins)
}

// TestObtainGivenUpWhileKazooHoldsTheLockLeavesOnlyKazoosNode: a Kazoo
// Lock holds the lease's lock (a Kazoo taker between its read and its
// write); Go takers that wait for it and give up leave no node of
// theirs, and once Kazoo releases, a Kazoo taker and then a Go one decide
// at once, the Go one refused.
func TestObtainGivenUpWhileKazooHoldsTheLockLeavesOnlyKazoosNode(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, 2*time.Minute)
	path := root + "/kazoo-holds"
	if err := c.EnsurePath(ctx, path); err != nil {
		t.Fatal(err)
	}
	kl := peertest.Kazoo(t, ens.ConnectString(), path)
	kl.Do("ACQUIRED", "acquire 10")
	for i := 0; i < 3; i++ {
		gctx, cancel := context.WithTimeout(ctx, time.Duration(200+100*i)*time.Millisecond)
		_, err := lease.Obtain(gctx, c, path, time.Hour, as(fmt.Sprintf("go-%d", i)))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Obtain waiting for Kazoo's lock: %v, want DeadlineExceeded", err)
		}
	}
	zktest.Eventually(t, 10*time.Second, "only Kazoo's lock node", func() error {
		kids, _, err := obs.Children(path)
		if err != nil {
			return err
		}
		if len(kids) != 1 || strings.HasPrefix(kids[0], "_c_") {
			return fmt.Errorf("children %v, want Kazoo's node only", kids)
		}
		return nil
	})
	kl.Do("RELEASED", "release")
	kz := peertest.KazooLease(t, ens.ConnectString())
	kz.Do("LEASE True", "lease %s 3600 kazoo", path)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := lease.Obtain(sctx, c, path, time.Hour, as("go"))
	wantHeld(t, err)
	lockNodesLeft(t, obs, path, 10*time.Second)
}
