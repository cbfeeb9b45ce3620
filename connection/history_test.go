package connection_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// replaced runs a client through a replaced database (replace does it)
// and returns its sessions before and after, checking what the servers
// hold: the new session, not the old one.
func replaced(t *testing.T, ens *zktest.Ensemble, c *connection.Client, replace func() error) (before, after *connection.Session) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	before = c.Session()
	if err := replace(); err != nil {
		t.Fatal(err)
	}
	expect(t, states, 30*time.Second, connection.Suspended, connection.Lost, connection.Reconnected)
	after = c.Session()
	if after == nil || after.ID() == before.ID() {
		t.Fatalf("session after the replaced database: %v; want a new one (the old was %#x)", after, before.ID())
	}
	if !errors.Is(before.Err(), connection.ErrSessionLost) {
		t.Fatalf("the old session's error: %v; want ErrSessionLost", before.Err())
	}
	zktest.Eventually(t, 10*time.Second, "the servers hold the new session", func() error {
		if s := testkit.ServerSessions(t, ens); !s[after.ID()] || s[before.ID()] {
			return fmt.Errorf("server sessions %v; want %#x and not %#x", s, after.ID(), before.ID())
		}
		return nil
	})
	return before, after
}

// write makes n nodes under root, moving the servers' zxid on.
func write(t *testing.T, c *connection.Client, root string, n int) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for i := range n {
		if _, err := c.Create(ctx, fmt.Sprintf("%s/n%d", root, i), nil, connection.Persistent); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWipedDatabaseStartsANewHistory(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	c := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	write(t, c, "", 20)
	before, after := replaced(t, ens, c, ens.WipeDatabase)
	if before.History() != 0 || after.History() != 1 {
		t.Fatalf("histories %d, then %d; want 0, then 1", before.History(), after.History())
	}
	// The new history is the client's from now on: a later loss of the
	// session does not count it again.
	write(t, c, "", 5)
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	if err := ens.Stop(0); err != nil {
		t.Fatal(err)
	}
	expect(t, states, 30*time.Second, connection.Suspended, connection.Lost)
	if err := ens.Start(0); err != nil {
		t.Fatal(err)
	}
	expect(t, states, 30*time.Second, connection.Reconnected)
	if h := c.Session().History(); h != 1 {
		t.Fatalf("history after a session lost in the same database: %d; want 1", h)
	}
}

func TestRestoredBackupStartsANewHistory(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	c := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	write(t, c, "", 5)
	b, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, "/after-backup", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	// More changes after the backup than the new session's own make
	// (its creation, the check): otherwise its zxids have caught up with
	// what the client saw, and only the data can tell (recipes/cache).
	write(t, c, "/after-backup", 10)
	_, after := replaced(t, ens, c, func() error { return ens.RestoreBackup(b) })
	if after.History() != 1 {
		t.Fatalf("history after the restore: %d; want 1", after.History())
	}
	if ok, _, err := c.Exists(ctx, "/after-backup"); err != nil || ok {
		t.Fatalf("a node made after the backup: exists %v, %v; want gone with the restore", ok, err)
	}
}

func TestExpiredSessionStaysInItsHistory(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(2*time.Second))
	other := open(t, ens.Servers())
	write(t, c, root, 5)
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	before := c.Session()
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	write(t, other, root+"/n0", 5) // the servers move on meanwhile
	lost := false
	for s := range states {
		lost = lost || s == connection.Lost
		if s == connection.Reconnected && lost {
			break
		}
	}
	after := c.Session()
	if after.ID() == before.ID() || after.History() != before.History() {
		t.Fatalf("after an expiry: session %#x history %d, before %#x history %d; want a new session in the same history",
			after.ID(), after.History(), before.ID(), before.History())
	}
}
