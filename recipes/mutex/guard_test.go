package mutex_test

import (
	"context"
	"errors"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// TestGuardOfReentrantHold: a reentrant Lock keeps the hold, and its
// guard; the guard commits until the last Unlock, and not after, nor once
// the lock is taken again (a new hold). A Mutex that holds nothing gives
// a guard that fails with ErrNotLocked.
func TestGuardOfReentrantHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/state", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	set := func(v string) *zk.SetDataRequest {
		return &zk.SetDataRequest{Path: root + "/state", Data: []byte(v), Version: -1}
	}
	m := newMutex(t, c, root+"/lock")
	_, err := c.Multi(ctx, m.Guard(), set("not held"))
	if !errors.Is(err, connection.ErrGuardFailed) || !errors.Is(err, mutex.ErrNotLocked) {
		t.Fatalf("guard of a Mutex that holds nothing: %v, want ErrGuardFailed and ErrNotLocked", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	g := m.Guard()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Guard().Path() != g.Path() {
		t.Fatal("a reentrant Lock changed the guard's node")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Multi(ctx, g, set("held once")); err != nil {
		t.Fatalf("guard after one of two Unlocks: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Multi(ctx, g, set("released")); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("guard after the last Unlock: %v, want ErrGuardFailed", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	if _, err := c.Multi(ctx, g, set("the next hold")); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("the first hold's guard during the next hold: %v, want ErrGuardFailed", err)
	}
	data, _, err := c.Get(ctx, root+"/state")
	if err != nil || string(data) != "held once" {
		t.Fatalf("state %q, %v: want the write made while held", data, err)
	}
}

// TestGuardAfterRevocationRequest: a revocation request writes to the
// holder's node (its version changes); the guard, which does not compare
// versions, still commits while the hold lasts.
func TestGuardAfterRevocationRequest(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/state", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, c, root+"/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	if err := mutex.Revoke(ctx, open(t, ens.Servers()), m.Node()); err != nil {
		t.Fatal(err)
	}
	if _, st, err := c.Get(ctx, m.Node()); err != nil || st.Version == 0 {
		t.Fatalf("the holder's node after a revocation request: %+v, %v; want a new version", st, err)
	}
	if _, err := c.Multi(ctx, m.Guard(), &zk.SetDataRequest{Path: root + "/state", Data: []byte("x"), Version: -1}); err != nil {
		t.Fatalf("guard of a hold asked to let go: %v", err)
	}
}

// TestGuardRacingUnlock: writers hammer a holder's guarded transactions
// (each creates a sequential log node) while the holder unlocks and a
// holder on another client, queued behind it, takes the lock and writes
// under its own guard.
// Every transaction of the first holder that committed did so before its
// node was deleted (its log node's czxid is below the deletion's zxid);
// every answer matches the server (a nil error for each log node, an
// ErrGuardFailed for the rest); no deadlock (run it with -race).
func TestGuardRacingUnlock(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	a := open(t, ens.Servers())
	b := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	for _, p := range []string{root + "/log", root + "/lock"} {
		if _, err := a.Create(ctx, p, nil, connection.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	logOp := func(who string) *zk.CreateRequest {
		return &zk.CreateRequest{Path: root + "/log/" + who + "-", Flags: zk.FlagSequence}
	}
	ma, mb := newMutex(t, a, root+"/lock"), newMutex(t, b, root+"/lock")
	if err := ma.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	g := ma.Guard()
	var committed, refused, atServer atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := a.Multi(ctx, logOp("a"), g)
				switch {
				case err == nil:
					committed.Add(1)
				case errors.Is(err, connection.ErrGuardFailed):
					refused.Add(1)
					if len(res) == 2 {
						atServer.Add(1)
					}
				default:
					t.Errorf("guarded transaction: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	locked := make(chan error, 1)
	go func() { locked <- mb.Lock(ctx) }()
	time.Sleep(100 * time.Millisecond)
	if err := ma.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if _, err := b.Multi(ctx, mb.Guard(), logOp("b")); err != nil {
		t.Fatalf("B's guarded write: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	defer mb.Unlock(ctx)

	obs := ens.Conn(t)
	// The lock directory's pzxid, B's node made before (B queued behind
	// A) and nothing else since: the zxid of A's node's deletion.
	_, dst, err := obs.Get(connx.Of(a).ServerPath(root + "/lock"))
	if err != nil {
		t.Fatal(err)
	}
	names, _, err := obs.Children(connx.Of(a).ServerPath(root + "/log"))
	if err != nil {
		t.Fatal(err)
	}
	var aLogs int64
	for _, n := range names {
		_, st, err := obs.Get(path.Join(connx.Of(a).ServerPath(root+"/log"), n))
		if err != nil {
			t.Fatal(err)
		}
		if n[0] != 'a' {
			continue
		}
		aLogs++
		if st.Czxid > dst.Pzxid {
			t.Errorf("A's log node %s (czxid %d) committed after A's lock node was deleted (zxid %d)", n, st.Czxid, dst.Pzxid)
		}
	}
	if aLogs != committed.Load() {
		t.Errorf("%d of A's log nodes on the server, %d transactions answered as committed", aLogs, committed.Load())
	}
	t.Logf("A: %d committed, %d refused (%d by the server)", committed.Load(), refused.Load(), atServer.Load())
}

// TestGuardAbandonedThenReleased: a holder (session policy) is cut off;
// its guarded transaction, called in the cut, is abandoned (its context
// ends: ErrOutcomeUnknown) and the holder unlocks, all while the
// transaction waits in go-zookeeper's queue ahead of the release. When the
// network heals, both are written, in that order: the transaction does
// not apply, the hold being over when it is written.
func TestGuardAbandonedThenReleased(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	a := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	ctx := ctxFor(t, time.Minute)
	obs := ens.Conn(t)
	if _, err := obs.Create(root+"/state", []byte("init"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, a, root+"/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	states := a.Listen(ctx)
	p.Cut()
	for s := range states {
		if s == connection.Suspended {
			break
		}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := a.Multi(short, m.Guard(), &zk.SetDataRequest{Path: root + "/state", Data: []byte("abandoned"), Version: -1})
	cancel()
	if !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Fatalf("abandoned guarded transaction: %v, want ErrOutcomeUnknown", err)
	}
	unlocked := make(chan error, 1)
	go func() { unlocked <- m.Unlock(ctx) }()
	time.Sleep(300 * time.Millisecond)
	p.Restore()
	if err := <-unlocked; err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := a.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}
	if data, st, err := obs.Get(root + "/state"); err != nil || string(data) != "init" {
		t.Fatalf("state %q (version %v), %v: the abandoned transaction applied after the hold ended", data, st, err)
	}
}

// TestGuardOfAnotherClient: a hold's guard in a Multi on another client is
// refused before anything is sent, and a Multi whose only op is a guard
// answers one response, the guard's.
func TestGuardOfAnotherClient(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	a, b := open(t, ens.Servers()), open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := a.Create(ctx, root+"/state", []byte("init"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, a, root+"/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	_, err := b.Multi(ctx, m.Guard(), &zk.SetDataRequest{Path: root + "/state", Data: []byte("b"), Version: -1})
	if !errors.Is(err, connection.ErrGuardFailed) {
		t.Errorf("A's guard in B's Multi: %v, want ErrGuardFailed", err)
	}
	res, err := a.Multi(ctx, m.Guard())
	if err != nil || len(res) != 1 || res[0].Error != nil {
		t.Errorf("Multi of a guard only: %+v, %v: want one response and no error", res, err)
	}
	if data, _, err := a.Get(ctx, root+"/state"); err != nil || string(data) != "init" {
		t.Errorf("state %q, %v", data, err)
	}
}

// TestGuardAcrossCutUnderStandardPolicy: writers hammer a holder's
// guarded transactions (standard policy: Suspended ends the hold) while
// the network is cut and then heals. Transactions that were waiting in
// go-zookeeper's queue are written on the new connection, after the hold
// ended: none of them commits (none of A's log nodes is younger than a
// mark made during the cut), though the holder's node is still there in
// the same session.
func TestGuardAcrossCutUnderStandardPolicy(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	a := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, time.Minute)
	obs := ens.Conn(t)
	if _, err := obs.Create(root+"/log", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, a, root+"/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	g := m.Guard()
	var committed, unknown atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := a.Multi(ctx, g, &zk.CreateRequest{Path: root + "/log/a-", Flags: zk.FlagSequence})
				switch {
				case err == nil:
					committed.Add(1)
				case errors.Is(err, connection.ErrGuardFailed):
				case errors.Is(err, connection.ErrOutcomeUnknown):
					unknown.Add(1)
				default:
					t.Errorf("guarded transaction: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	p.Cut()
	time.Sleep(300 * time.Millisecond)
	mark, err := obs.Create(root+"/mark", nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	_, mst, err := obs.Get(mark)
	if err != nil {
		t.Fatal(err)
	}
	p.Restore()
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatal("the hold did not end at Suspended")
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err := a.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}
	names, _, err := obs.Children(root + "/log")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		_, st, err := obs.Get(root + "/log/" + n)
		if err != nil {
			t.Fatal(err)
		}
		if st.Czxid > mst.Czxid {
			t.Errorf("A's log node %s (czxid %d) committed after the cut (mark %d), its hold ended at Suspended", n, st.Czxid, mst.Czxid)
		}
	}
	t.Logf("A: %d committed, %d unknown, %d on the server", committed.Load(), unknown.Load(), len(names))
	_ = m.Unlock(ctx) // lost: says so
}

// TestGuardOfLargeTransaction: a transaction near the request limit
// (jute.maxbuffer), with two guards of one hold among 120 ops of 8 KiB:
// the connection resolves the guards of the whole frame; it commits while
// the hold lasts, and the server refuses it once the hold is over when
// the transaction is written.
func TestGuardOfLargeTransaction(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	a := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := a.Create(ctx, root+"/big", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, a, root+"/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	ops := func(tag string) []any {
		var out []any
		for i := range 120 {
			if i == 7 || i == 90 {
				out = append(out, m.Guard())
			}
			data := make([]byte, 8<<10)
			copy(data, tag)
			out = append(out, &zk.CreateRequest{Path: root + "/big/" + tag + "-", Data: data, Flags: zk.FlagSequence})
		}
		return out
	}
	res, err := a.Multi(ctx, ops("held")...)
	if err != nil || len(res) != 122 || res[7].Error != nil || res[90].Error != nil || res[8].String == "" {
		t.Fatalf("large guarded transaction of a live hold: %d responses, %v", len(res), err)
	}
	// Over between Multi's look and the write: the connection decides.
	g := m.Guard()
	var calls atomic.Int32
	late := connx.NewGuard(g.Path(), g.Session(), func() error {
		if calls.Add(1) == 1 {
			return g.Err()
		}
		return errors.New("over when written")
	})
	big := ops("late")
	big[0] = late
	_, err = a.Multi(ctx, big...)
	if !errors.Is(err, connection.ErrGuardFailed) || !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("large transaction whose guard was over when written: %v, want ErrGuardFailed (BadVersion)", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	names, _, err := a.Children(ctx, root+"/big")
	if err != nil || len(names) != 120 {
		t.Fatalf("%d nodes, %v: want the 120 of the live hold's transaction only", len(names), err)
	}
}
