package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/lease"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestObtainWithLostAnswer: the record's write is applied and its answer
// lost; Obtain settles it by reading the record back and returns the
// lease, and the lock's node is gone once the connection is back. Not
// parallel: the hook is the package's.
func TestObtainWithLostAnswer(t *testing.T) {
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/lost"
	var once sync.Once
	lease.BeforeWrite(func() { once.Do(proxy.DropReplies) })
	t.Cleanup(func() { lease.BeforeWrite(nil) })
	states := c.Listen(ctx)
	done := make(chan error, 1)
	var l *lease.Lease
	go func() {
		var err error
		l, err = lease.Obtain(ctx, c, path, time.Hour, lease.WithIdentifier("a"))
		done <- err
	}()
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	proxy.Restore()
	if err := <-done; err != nil {
		t.Fatalf("Obtain whose write's answer was lost: %v", err)
	}
	rec, err := lease.Current(ctx, c, path)
	if err != nil || rec.Holder != "a" || !rec.End.Equal(l.End()) {
		t.Fatalf("record %+v, %v; want a until %v", rec, err, l.End())
	}
	_, err = lease.Obtain(ctx, c, path, time.Hour, lease.WithIdentifier("b"))
	wantHeld(t, err)
	kids, _, err := obs.Children(path)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children of the lease after the lost answer = %v, %v; want the record only", kids, err)
	}
}

// TestObtainAcrossCutConnection: Obtain called while the connection is
// cut waits for it, and obtains the lease once it is back.
func TestObtainAcrossCutConnection(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := testkit.Ctx(t, time.Minute)
	states := c.Listen(ctx)
	proxy.Cut()
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := lease.Obtain(ctx, c, root+"/cut", time.Hour, lease.WithIdentifier("a"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Obtain returned while the connection was cut: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	proxy.Restore()
	if err := <-done; err != nil {
		t.Fatalf("Obtain across a cut connection: %v", err)
	}
	if rec, err := lease.Current(ctx, c, root+"/cut"); err != nil || rec.Holder != "a" {
		t.Fatalf("record %+v, %v", rec, err)
	}
}

// TestObtainAfterSessionExpiry: a client whose session expired while it
// was cut off obtains the lease in its next session; the lock node of the
// lost session went with it.
func TestObtainAfterSessionExpiry(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/expiry"
	if _, err := lease.Obtain(ctx, c, path, time.Second, lease.WithIdentifier("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := proxy.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	l, err := lease.Obtain(ctx, c, path, time.Hour, lease.WithIdentifier("a"))
	if err != nil {
		t.Fatalf("Obtain after expiry: %v", err)
	}
	if kids, _, err := obs.Children(path); err != nil || len(kids) != 1 {
		t.Fatalf("children %v, %v", kids, err)
	}
	if rec, _ := lease.Current(ctx, c, path); !rec.End.Equal(l.End()) {
		t.Fatalf("record %+v, lease end %v", rec, l.End())
	}
}

// lockNodesLeft waits until path has no child but the record: every lock
// node of an Obtain, given up or not, is deleted.
func lockNodesLeft(t *testing.T, obs *zk.Conn, path string, within time.Duration) {
	t.Helper()
	testkit.NoChildrenLeft(t, obs, path, within, func(k string) bool { return k == lease.HolderNode })
}

// wantGivenUp fails unless err is what an Obtain whose context ended says:
// its context's error, or a write whose outcome is unknown.
func wantGivenUp(t *testing.T, what string, err, ctxErr error) {
	t.Helper()
	if !errors.Is(err, ctxErr) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Fatalf("%s: %v, want %v or ErrOutcomeUnknown", what, err, ctxErr)
	}
}

// TestObtainWithDeadlineShorterThanTheReplyLeavesNoLockNode: with every
// answer late, Obtains whose deadlines end at each step of the attempt
// (the lock's create, its listing, the read, the write) fail with
// DeadlineExceeded or an unknown outcome, and leave no lock node: another
// taker on another client is answered at once, not kept waiting.
func TestObtainWithDeadlineShorterThanTheReplyLeavesNoLockNode(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	c2 := testkit.Open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 2*time.Minute)
	path := root + "/late"
	if err := c.EnsurePath(ctx, path); err != nil {
		t.Fatal(err)
	}
	proxy.DelayReplies(150 * time.Millisecond)
	for step := 1; step <= 8; step++ {
		dctx, cancel := context.WithTimeout(ctx, time.Duration(step)*75*time.Millisecond)
		_, err := lease.Obtain(dctx, c, path, time.Hour, as("a"))
		cancel()
		if err != nil {
			wantGivenUp(t, fmt.Sprintf("deadline %d", step), err, context.DeadlineExceeded)
		}
	}
	proxy.Restore()
	lockNodesLeft(t, obs, path, 20*time.Second)
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := lease.Obtain(bctx, c2, path, time.Hour, as("b")); err != nil && !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("another taker after the given-up ones: %v", err)
	}
}

// TestObtainGivenUpWhileItsWriteIsUnansweredLeavesNoLockNode: the
// record's write goes out, its answer and every later one is dropped, and
// the caller gives up. Obtain says so, and once the answers pass again
// the lock node is gone and the lease is decided by the record alone.
// Not parallel: the hook is the package's.
func TestObtainGivenUpWhileItsWriteIsUnansweredLeavesNoLockNode(t *testing.T) {
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/unanswered"
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	lease.BeforeWrite(func() {
		once.Do(func() {
			proxy.DropReplies()
			time.AfterFunc(300*time.Millisecond, cancel)
		})
	})
	t.Cleanup(func() { lease.BeforeWrite(nil) })
	_, err := lease.Obtain(octx, c, path, time.Hour, as("a"))
	wantGivenUp(t, "Obtain given up", err, context.Canceled)
	proxy.Restore()
	lockNodesLeft(t, obs, path, 30*time.Second)
	rec, err := lease.Current(ctx, c, path)
	if err != nil || rec.Holder != "a" {
		t.Fatalf("record %+v, %v; want a's (its write applied)", rec, err)
	}
	_, err = lease.Obtain(ctx, c, path, time.Hour, as("b"))
	wantHeld(t, err)
}

// TestObtainWithSessionExpiredBeforeItsWriteStartsOver: the session
// expires after the record was read and before it is written; the write,
// guarded by the lost lock, is refused, and Obtain starts over in the
// next session and obtains the lease, leaving only the record. Not
// parallel: the hook is the package's.
func TestObtainWithSessionExpiredBeforeItsWriteStartsOver(t *testing.T) {
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/expired-before-write"
	var once sync.Once
	lease.BeforeWrite(func() {
		once.Do(func() {
			if _, err := proxy.ExpireSession(); err != nil {
				t.Error(err)
			}
		})
	})
	t.Cleanup(func() { lease.BeforeWrite(nil) })
	l, err := lease.Obtain(ctx, c, path, time.Hour, as("a"))
	if err != nil {
		t.Fatalf("Obtain whose session expired before its write: %v", err)
	}
	rec, err := lease.Current(ctx, c, path)
	if err != nil || rec.Holder != "a" || !rec.End.Equal(l.End()) {
		t.Fatalf("record %+v, %v; want a until %v", rec, err, l.End())
	}
	lockNodesLeft(t, obs, path, 10*time.Second)
}

// TestManyTakersOnOneClientSomeGivingUp: takers on one client, a third
// of them with deadlines spread over the burst and every answer late:
// at most one obtains, the others are refused or gave up, and no lock
// node is left.
func TestManyTakersOnOneClientSomeGivingUp(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 2*time.Minute)
	path := root + "/many"
	proxy.DelayReplies(20 * time.Millisecond)
	var b testkit.Burst
	var won atomic.Int32
	for i := 0; i < 15; i++ {
		b.Go(func() {
			tctx, cancel := b.Context(ctx, i, 3, 50*time.Millisecond, 40*time.Millisecond)
			defer cancel()
			_, err := lease.Obtain(tctx, c, path, time.Hour, as(fmt.Sprintf("t%d", i)))
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, lease.ErrHeld):
				b.Held.Add(1)
			case tctx.Err() != nil && (errors.Is(err, tctx.Err()) || errors.Is(err, connection.ErrOutcomeUnknown)):
			default:
				b.Fail("taker %d: %v", i, err)
			}
		})
	}
	b.Wait(t, 15, time.Minute, "the takers")
	proxy.Restore()
	if won.Load() > 1 {
		t.Fatalf("%d takers obtained the lease", won.Load())
	}
	lockNodesLeft(t, obs, path, 20*time.Second)
}

// TestObtainGivenUpOnAFaultyLinkLeavesNoLockNode: an Obtain whose
// caller gives up while the lock's create is unanswered, or while the
// connection is cut before the record's write, fails with its context's
// error or an unknown outcome, writes no record, and leaves no lock node once the link is back
// (the session lives on): another taker obtains the lease. Not parallel:
// the hook is the package's.
func TestObtainGivenUpOnAFaultyLinkLeavesNoLockNode(t *testing.T) {
	for _, fault := range []string{"lock create unanswered", "cut before write"} {
		t.Run(fault, func(t *testing.T) {
			ens := zkShared.Ensemble(t)
			root := ens.Root(t)
			proxy := ens.Proxy(t)
			c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
			c2 := testkit.Open(t, ens.Servers())
			obs := ens.Conn(t)
			ctx := testkit.Ctx(t, time.Minute)
			path := root + "/faulty"
			if err := c.EnsurePath(ctx, path); err != nil {
				t.Fatal(err)
			}
			session := c.Session().ID()
			octx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
			defer cancel()
			if fault == "cut before write" {
				var once sync.Once
				lease.BeforeWrite(func() { once.Do(proxy.Cut) })
				t.Cleanup(func() { lease.BeforeWrite(nil) })
			} else {
				proxy.DropReplies()
			}
			_, err := lease.Obtain(octx, c, path, time.Hour, as("a"))
			wantGivenUp(t, "Obtain given up", err, context.DeadlineExceeded)
			proxy.Restore()
			lockNodesLeft(t, obs, path, 20*time.Second)
			if got := c.Session().ID(); got != session {
				t.Fatalf("session %#x replaced by %#x: its nodes went with it", session, got)
			}
			if _, err := lease.Current(ctx, c2, path); !errors.Is(err, zk.ErrNoNode) {
				t.Fatalf("a record after an Obtain given up before its write: %v", err)
			}
			if _, err := lease.Obtain(ctx, c2, path, time.Hour, as("b")); err != nil {
				t.Fatalf("another taker: %v", err)
			}
		})
	}
}

// TestManyTakersOnOneClientAcrossSessionExpiry: the session of a client
// with many takers in flight expires: at most one obtains the lease, the
// record names it if one did, every other is refused or told its session
// was lost, and no lock node is left.
func TestManyTakersOnOneClientAcrossSessionExpiry(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 2*time.Minute)
	for round := 0; round < 4; round++ {
		path := fmt.Sprintf("%s/r%d", root, round)
		if err := c.EnsurePath(ctx, path); err != nil {
			t.Fatal(err)
		}
		proxy.DelayReplies(30 * time.Millisecond)
		var b testkit.Burst
		var winners sync.Map
		var lost atomic.Int32
		for i := 0; i < 10; i++ {
			b.Go(func() {
				id := fmt.Sprintf("t%d", i)
				_, err := lease.Obtain(ctx, c, path, time.Hour, as(id))
				switch {
				case err == nil:
					winners.Store(id, true)
				case errors.Is(err, lease.ErrHeld):
					b.Held.Add(1)
				case errors.Is(err, connection.ErrSessionLost):
					lost.Add(1)
				default:
					b.Fail("taker %d: %v", i, err)
				}
			})
		}
		time.Sleep(time.Duration(round) * 60 * time.Millisecond)
		if _, err := proxy.ExpireSession(); err != nil {
			t.Fatal(err)
		}
		b.Wait(t, 10, time.Minute, "the expiry")
		proxy.Restore()
		var won []string
		winners.Range(func(k, _ any) bool { won = append(won, k.(string)); return true })
		t.Logf("round %d: obtained by %v, %d told their session was lost", round, won, lost.Load())
		if len(won) > 1 {
			t.Fatalf("round %d: obtained by %v", round, won)
		}
		if len(won) == 1 {
			if rec, err := lease.Current(ctx, c, path); err != nil || rec.Holder != won[0] {
				t.Fatalf("round %d: record %+v, %v; want %s's", round, rec, err, won[0])
			}
		}
		lockNodesLeft(t, obs, path, 20*time.Second)
	}
}

// TestObtainRereadsARecordChangedWithoutTheLock: between Obtain's read
// and its write, a client that takes no lock writes, deletes or creates
// the record. The guarded write is refused and Obtain reads again: it is
// refused while the other record's end is in the future, and writes over
// nothing it did not read. Not parallel: the hook is the package's.
func TestObtainRereadsARecordChangedWithoutTheLock(t *testing.T) {
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	t.Cleanup(func() { lease.BeforeWrite(nil) })
	future := lease.EncodeRecord(lease.Record{Holder: "x", End: time.Now().Add(time.Hour).UTC().Truncate(time.Second)})
	for _, tc := range []struct {
		name     string
		before   bool // a record of "a", over, is there first
		change   func(holder string) error
		wantHeld bool
	}{
		{"written over", true, func(h string) error { _, err := obs.Set(h, future, -1); return err }, true},
		{"created", false, func(h string) error {
			_, err := obs.Create(h, future, 0, zk.WorldACL(zk.PermAll))
			return err
		}, true},
		{"deleted", true, func(h string) error { return obs.Delete(h, -1) }, false},
	} {
		path := root + "/" + strings.ReplaceAll(tc.name, " ", "-")
		holder := path + "/" + lease.HolderNode
		if tc.before {
			if _, err := lease.Obtain(ctx, c, path, time.Second, as("a"), lease.WithClock(func() time.Time { return time.Now().Add(-time.Hour) })); err != nil {
				t.Fatal(err)
			}
		}
		var once sync.Once
		lease.BeforeWrite(func() {
			once.Do(func() {
				if err := tc.change(holder); err != nil {
					t.Errorf("%s: %v", tc.name, err)
				}
			})
		})
		_, err := lease.Obtain(ctx, c, path, time.Hour, as("b"))
		lease.BeforeWrite(nil)
		if tc.wantHeld {
			if !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("%s: %v, want ErrHeld", tc.name, err)
			}
			if data, _, err := obs.Get(holder); err != nil || string(data) != string(future) {
				t.Fatalf("%s: record now %q, %v; want x's", tc.name, data, err)
			}
		} else if rec, cerr := lease.Current(ctx, c, path); err != nil || cerr != nil || rec.Holder != "b" {
			t.Fatalf("%s: %v; record %+v, %v; want b's", tc.name, err, rec, cerr)
		}
		lockNodesLeft(t, obs, path, 10*time.Second)
	}
}

// TestObtainOneOfManyTakersOnOneClient: more takers than slots on one
// client at once: each slot is obtained by exactly one, the rest are
// refused, and no lock node is left.
func TestObtainOneOfManyTakersOnOneClient(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	path := root + "/pool"
	const slots, takers = 3, 9
	var b testkit.Burst
	var mu sync.Mutex
	bySlot := map[string]string{}
	for i := 0; i < takers; i++ {
		b.Go(func() {
			id := fmt.Sprintf("t%d", i)
			l, err := lease.ObtainOneOf(ctx, c, path, slots, time.Hour, as(id))
			switch {
			case err == nil:
				mu.Lock()
				defer mu.Unlock()
				if other, ok := bySlot[l.Path()]; ok {
					b.Fail("%s obtained by %s and %s", l.Path(), other, id)
				}
				bySlot[l.Path()] = id
			case errors.Is(err, lease.ErrHeld):
				b.Held.Add(1)
			default:
				b.Fail("%s: %v", id, err)
			}
		})
	}
	b.Wait(t, takers, time.Minute, "the takers")
	if len(bySlot) != slots || b.Held.Load() != takers-slots {
		t.Fatalf("slots obtained %v, %d refused; want %d and %d", bySlot, b.Held.Load(), slots, takers-slots)
	}
	for slot, id := range bySlot {
		if rec, err := lease.Current(ctx, c, slot); err != nil || rec.Holder != id {
			t.Fatalf("%s: record %+v, %v; want %s's", slot, rec, err, id)
		}
		lockNodesLeft(t, obs, slot, 10*time.Second)
	}
}

// TestObtainWithLostAnswerAndSessionExpiry: the record's write goes
// out and its answer is lost (the write applied, or its request was
// dropped), and the session expires before the client hears from the
// servers again. Obtain settles it in the next session by reading the
// record back (or starts over) and returns the lease; only the record is
// left. Not parallel: the hook is the package's.
func TestObtainWithLostAnswerAndSessionExpiry(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			ens := zkShared.Ensemble(t)
			root := ens.Root(t)
			proxy := ens.Proxy(t)
			c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
			obs := ens.Conn(t)
			ctx := testkit.Ctx(t, time.Minute)
			path := root + "/lost-then-expired"
			first := c.Session().ID()
			var once sync.Once
			lease.BeforeWrite(func() {
				once.Do(func() {
					if applied {
						proxy.DropReplies()
					} else {
						proxy.DropRequests()
					}
				})
			})
			t.Cleanup(func() { lease.BeforeWrite(nil) })
			done := make(chan error, 1)
			var l *lease.Lease
			go func() {
				var err error
				l, err = lease.Obtain(ctx, c, path, time.Hour, as("a"))
				done <- err
			}()
			holder := path + "/" + lease.HolderNode
			if applied {
				zktest.Eventually(t, 10*time.Second, "the write applied", func() error {
					if data, _, err := obs.Get(holder); err != nil || !strings.Contains(string(data), `"a"`) {
						return fmt.Errorf("record %q, %v", data, err)
					}
					return nil
				})
			} else {
				time.Sleep(500 * time.Millisecond)
				if ok, _, err := obs.Exists(holder); err != nil || ok {
					t.Fatalf("a record with the write's request dropped (%v)", err)
				}
			}
			if _, err := proxy.ExpireSession(); err != nil {
				t.Fatal(err)
			}
			proxy.Restore()
			if err := <-done; err != nil {
				t.Fatalf("Obtain whose answer was lost and session expired: %v", err)
			}
			if s := c.Session(); s == nil || s.ID() == first {
				t.Fatalf("session %v, want one after %#x", s, first)
			}
			rec, err := lease.Current(ctx, c, path)
			if err != nil || rec.Holder != "a" || !rec.End.Equal(l.End()) {
				t.Fatalf("record %+v, %v; want a until %v", rec, err, l.End())
			}
			lockNodesLeft(t, obs, path, 10*time.Second)
		})
	}
}
