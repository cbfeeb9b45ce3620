package lease_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/lease"
)

// clock is a settable clock for WithClock.
type clock struct{ ns atomic.Int64 }

func clockAt(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}

func (c *clock) set(t time.Time)   { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time    { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) opt() lease.Option { return lease.WithClock(c.now) }
func as(id string) lease.Option    { return lease.WithIdentifier(id) }
func t0() time.Time                { return time.Date(2026, 12, 7, 12, 0, 0, 500_000_000, time.UTC) }
func wantHeld(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("%v, want ErrHeld", err)
	}
}

// TestObtainExcludesOthersUntilEnd: a lease obtained is refused to
// another holder until its end, to the second, and obtained by it then.
func TestObtainExcludesOthersUntilEnd(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	path := root + "/cleanup"
	clk := clockAt(t0())
	a, err := lease.Obtain(ctx, c, path, time.Hour, as("a"), clk.opt())
	if err != nil {
		t.Fatal(err)
	}
	wantEnd := time.Date(2026, 12, 7, 13, 0, 0, 0, time.UTC)
	if a.Holder() != "a" || !a.End().Equal(wantEnd) || a.Path() != path {
		t.Fatalf("lease %q %v at %s, want a until %v", a.Holder(), a.End(), a.Path(), wantEnd)
	}
	_, err = lease.Obtain(ctx, c, path, time.Hour, as("b"), clk.opt())
	wantHeld(t, err)
	if !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("ErrHeld does not name the holder: %v", err)
	}
	clk.set(wantEnd.Add(-time.Nanosecond))
	_, err = lease.Obtain(ctx, c, path, time.Hour, as("b"), clk.opt())
	wantHeld(t, err)
	clk.set(wantEnd)
	b, err := lease.Obtain(ctx, c, path, time.Minute, as("b"), clk.opt())
	if err != nil {
		t.Fatalf("at the end of a's lease: %v", err)
	}
	rec, err := lease.Current(ctx, c, path)
	if err != nil || rec.Holder != "b" || !rec.End.Equal(b.End()) {
		t.Fatalf("Current = %+v, %v; want b until %v", rec, err, b.End())
	}
}

// TestHolderRenews: the holder obtains its lease again before its end,
// which moves the end; others stay out.
func TestHolderRenews(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	path := root + "/job"
	clk := clockAt(t0())
	first, err := lease.Obtain(ctx, c, path, 10*time.Minute, as("a"), clk.opt())
	if err != nil {
		t.Fatal(err)
	}
	clk.set(t0().Add(5 * time.Minute))
	again, err := lease.Obtain(ctx, c, path, 10*time.Minute, as("a"), clk.opt())
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if got := again.End().Sub(first.End()); got != 5*time.Minute {
		t.Fatalf("renewal moved the end by %v, want 5m", got)
	}
	clk.set(first.End().Add(time.Minute)) // after the first end, before the second
	_, err = lease.Obtain(ctx, c, path, time.Minute, as("b"), clk.opt())
	wantHeld(t, err)
}

// TestObtainLeavesOnlyTheRecord: the lock taken to decide is released
// before Obtain returns, whether the lease is obtained or refused.
func TestObtainLeavesOnlyTheRecord(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	path := root + "/x"
	if _, err := lease.Obtain(ctx, c, path, time.Minute, as("a")); err != nil {
		t.Fatal(err)
	}
	_, err := lease.Obtain(ctx, c, path, time.Minute, as("b"))
	wantHeld(t, err)
	kids, _, err := obs.Children(path)
	if err != nil || len(kids) != 1 || kids[0] != "lease_holder" {
		t.Fatalf("children of the lease = %v, %v; want [lease_holder]", kids, err)
	}
}

// TestDoneClosesAtEnd: Done closes, and Err says ErrExpired, when End
// comes by this process's clock; not before.
func TestDoneClosesAtEnd(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	l, err := lease.Obtain(ctx, c, root+"/short", 2*time.Second, as("a"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Err() != nil && time.Now().Before(l.End()) {
		t.Fatalf("Err before the end: %v", l.Err())
	}
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("Done still open 5 s after a 2 s lease (end %v, now %v)", l.End(), time.Now())
	}
	if late := time.Since(l.End()); late < -50*time.Millisecond || late > time.Second {
		t.Errorf("Done closed %v after End", late)
	}
	if !errors.Is(l.Err(), lease.ErrExpired) || !errors.Is(context.Cause(l.Context()), lease.ErrExpired) {
		t.Fatalf("Err after the end = %v", l.Err())
	}
}

// TestObtainOneOfFillsSlots: MultiNonBlockingLease's slots are taken in
// order, a holder renews its own, and a holder too many is refused.
func TestObtainOneOfFillsSlots(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	path := root + "/workers"
	for i, id := range []string{"a", "b", "c"} {
		l, err := lease.ObtainOneOf(ctx, c, path, 3, time.Hour, as(id))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if want := path + "/" + string(rune('0'+i)); l.Path() != want {
			t.Fatalf("%s obtained %s, want %s", id, l.Path(), want)
		}
	}
	_, err := lease.ObtainOneOf(ctx, c, path, 3, time.Hour, as("d"))
	wantHeld(t, err)
	l, err := lease.ObtainOneOf(ctx, c, path, 3, time.Hour, as("b"))
	if err != nil || l.Path() != path+"/1" {
		t.Fatalf("b again: %v, %v; want its slot 1", l, err)
	}
}

// TestObtainLeavesOtherVersionsAlone: a record of another version, or
// not Kazoo's, is not written over.
func TestObtainLeavesOtherVersionsAlone(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	for name, tc := range map[string]struct {
		data string
		want error
	}{
		"v2":      {`{"version": 2, "holder": "new", "end": "2000-01-01T00:00:00"}`, lease.ErrVersion},
		"garbage": {`garbage`, lease.ErrBadRecord},
	} {
		path := root + "/" + name
		if _, err := obs.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := obs.Create(path+"/lease_holder", []byte(tc.data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := lease.Obtain(ctx, c, path, time.Minute, as("a")); !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", name, err, tc.want)
		}
		if data, _, _ := obs.Get(path + "/lease_holder"); string(data) != tc.data {
			t.Fatalf("%s: record now %q", name, data)
		}
	}
}

// TestConcurrentTakersOneWins: of takers that try at once, one obtains.
func TestConcurrentTakersOneWins(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	c2 := testkit.Open(t, ens.Servers())
	for round := 0; round < 5; round++ {
		path := root + "/r" + string(rune('0'+round))
		var wg sync.WaitGroup
		var won, held atomic.Int32
		for i := 0; i < 6; i++ {
			client := c
			if i%2 == 1 {
				client = c2
			}
			id := string(rune('a' + i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := lease.Obtain(ctx, client, path, time.Hour, as(id))
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, lease.ErrHeld):
					held.Add(1)
				default:
					t.Errorf("%s: %v", id, err)
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 || held.Load() != 5 {
			t.Fatalf("round %d: %d obtained, %d refused; want 1 and 5", round, won.Load(), held.Load())
		}
	}
}

func TestObtainMisuse(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	invalid := map[string]error{}
	_, invalid["zero duration"] = lease.Obtain(ctx, c, root+"/m", 0)
	_, invalid["under a second"] = lease.Obtain(ctx, c, root+"/m", 999*time.Millisecond)
	_, invalid["negative duration"] = lease.ObtainOneOf(ctx, c, root+"/m", 2, -time.Second)
	_, invalid["no slots"] = lease.ObtainOneOf(ctx, c, root+"/m", 0, time.Second)
	_, invalid["empty identifier"] = lease.Obtain(ctx, c, root+"/m", time.Second, as(""))
	_, invalid["identifier not UTF-8"] = lease.Obtain(ctx, c, root+"/m", time.Second, as("\xff"))
	_, invalid["nil clock"] = lease.Obtain(ctx, c, root+"/m", time.Second, lease.WithClock(nil))
	_, invalid["nil client"] = lease.Obtain(ctx, nil, root+"/m", time.Second)
	for name, err := range invalid {
		if !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := lease.Obtain(ctx, c, "/", time.Second); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("the root: %v", err)
	}
	if _, err := lease.Obtain(ctx, c, "no/slash", time.Second); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("bad path: %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := lease.Obtain(done, c, root+"/m", time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if _, err := lease.Current(ctx, c, root+"/never"); !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("Current of a lease never obtained: %v", err)
	}
	closed := testkit.Open(t, ens.Servers())
	closed.Close()
	if _, err := lease.Obtain(ctx, closed, root+"/m", time.Second); !errors.Is(err, connection.ErrClosed) {
		t.Errorf("closed client: %v", err)
	}
}
