package partition_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The servers' database replaced under a running partition — emptied, or
// restored from an older backup: the members hold their split again in
// the new database (each acquired after a trusted, stable view of the
// party), a member whose process is gone not among them, every item held
// by the node the server shows first, and no member trusting a hold the
// server does not show; in bounded time and work.

// acquired says why the members are not all Acquired, or nil.
func acquired(members []*member) error {
	for _, m := range members {
		if st, _ := m.p.State(); st != partition.Acquired {
			return fmt.Errorf("%s is %v", m.id, st)
		}
	}
	return nil
}

// holdSplit waits, within the recovery, until the members hold their
// split of items as the server at conn shows it.
func holdSplit(t *testing.T, rec *testkit.Recovery, conn *zk.Conn, dir string, items []string, members []*member) {
	t.Helper()
	rec.Wait(t, 45*time.Second, "the members hold their split in the new database", func(context.Context) error {
		if err := split(conn, dir, items, members); err != nil {
			return err
		}
		return acquired(members)
	})
}

// checkedHolds waits until the checker has checked n open holds: the
// split held, checked against the server.
func checkedHolds(t *testing.T, ck *checker, n int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, "the checker checks the holds of the split", func() error {
		ck.mu.Lock()
		defer ck.mu.Unlock()
		if ck.holds < n {
			return fmt.Errorf("%d open holds checked", ck.holds)
		}
		return nil
	})
}

func TestPartitionFollowsWipedDatabase(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	testkit.Bump(t, conn, 30)
	const dir = "/work"
	items := itemsN(6)
	c1 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	c2 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	ms := []*member{start(t, c1, dir, "m1", items), start(t, c2, dir, "m2", items)}
	// A member whose process ends with the old database: its party node,
	// in Kazoo's shallow party layout, in a session of its own that never
	// comes back. It never takes its items.
	gone := ens.Conn(t)
	for _, p := range []string{dir, dir + "/party"} {
		if _, err := gone.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := gone.Create(dir+"/party/0123456789abcdef0123456789abcdef-gone", []byte("gone"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "the live members hold their shares of a party of three", func() error {
		for _, m := range ms {
			s := m.current()
			if s == nil {
				return fmt.Errorf("%s has no share", m.id)
			}
			if want := partition.KazooSplit(m.id, []string{"gone", "m1", "m2"}, items); !slices.Equal(s.Names(), want) {
				return fmt.Errorf("%s holds %v, want %v", m.id, s.Names(), want)
			}
		}
		return nil
	})
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return c1.Stats().Replies + c2.Stats().Replies })
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	ck := startChecker(conn, dir, items, func() []*member { return ms })
	holdSplit(t, rec, conn, dir, items, ms)
	rec.Check(t, "two partitioners")
	checkedHolds(t, ck, len(items))
	ck.finish(t)
	for _, c := range []*connection.Client{c1, c2} {
		if testkit.SessionHistory(t, c) != 1 {
			t.Fatalf("a member's history after the wipe: %d, want 1", testkit.SessionHistory(t, c))
		}
	}
}

func TestPartitionFollowsRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	const dir = "/work"
	items := itemsN(6)
	c1 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	c2 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	c4 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	m1, m2, m4 := start(t, c1, dir, "m1", items), start(t, c2, dir, "m2", items), start(t, c4, dir, "m4", items)
	settled(t, conn, dir, items, []*member{m1, m2, m4}, 30*time.Second)
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	// A member the backup holds, with its items, whose process ends after
	// it: the restored servers hold its nodes and session until they
	// expire it.
	m4.close(t)
	c4.Close()
	// A member that joins after the backup: the restored servers never
	// heard of it, nor of the items it took.
	c3 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	ms := []*member{m1, m2, start(t, c3, dir, "m3", items)}
	settled(t, conn, dir, items, ms, 30*time.Second)
	testkit.Bump(t, conn, 20)
	// The members hear the newest zxid, as clients that read do: the
	// restored servers refuse their sessions.
	for _, c := range []*connection.Client{c1, c2, c3} {
		if err := c.Sync(ctxFor(t, 10*time.Second), "/"); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return c1.Stats().Replies + c2.Stats().Replies + c3.Stats().Replies })
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	ck := startChecker(conn, dir, items, func() []*member { return ms })
	holdSplit(t, rec, conn, dir, items, ms)
	rec.Check(t, "three partitioners")
	checkedHolds(t, ck, len(items))
	ck.finish(t)
	for _, c := range []*connection.Client{c1, c2, c3} {
		if testkit.SessionHistory(t, c) != 1 {
			t.Fatalf("a member's history after the restore: %d, want 1", testkit.SessionHistory(t, c))
		}
	}
}
