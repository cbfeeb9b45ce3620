package group_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The servers' database replaced under a running group — emptied, or
// restored from an older backup: every view (a member's, a Watch's) ends
// trusted and equal to the server, a member whose process is gone is not
// in it, a live member is there again in the new database and seen, in
// bounded time and work.

// onServer renders the members of the Curator-layout group at dir as the
// server holds them, as render does a view's ("id=data,...").
func onServer(conn *zk.Conn, dir string) (string, error) {
	if _, err := conn.Sync(dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", err
	}
	names, _, err := conn.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	slices.Sort(names)
	var out []string
	for _, name := range names {
		data, _, err := conn.Get(path.Join(dir, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", err
		}
		out = append(out, name+"="+string(data))
	}
	return strings.Join(out, ","), nil
}

// followed checks that every view is trusted and, after a Sync, renders
// as want, and that the server holds want.
func followed(ctx context.Context, conn *zk.Conn, dir, want string, views ...*group.Group) error {
	if got, err := onServer(conn, dir); err != nil || got != want {
		return fmt.Errorf("the server holds %q (%v), want %q", got, err, want)
	}
	for _, g := range views {
		if _, err := g.Cache().Trust(ctx); err != nil {
			return err
		}
		if err := g.Cache().Sync(ctx); err != nil {
			return err
		}
		if got := render(g.Members()); got != want || !g.Cache().Snapshot().Trusted() {
			return fmt.Errorf("a view of %s renders %q (trusted %v), the server %q", dir, got, g.Cache().Snapshot().Trusted(), want)
		}
	}
	return nil
}

// watchGroup follows dir without joining, closed when the test ends.
func watchGroup(t *testing.T, c *connection.Client, dir string) *group.Group {
	t.Helper()
	w, err := group.Watch(c, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(ctxFor(t, 10*time.Second)) })
	return w
}

// owned checks that g's node is owned by its client's current session.
func owned(t *testing.T, conn *zk.Conn, g *group.Group, c *connection.Client) {
	t.Helper()
	_, stat, err := conn.Get(g.Node().Path())
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner != c.Session().ID() {
		t.Fatalf("%s is owned by %#x, not by its member's session %#x", g.Node().Path(), stat.EphemeralOwner, c.Session().ID())
	}
}

func TestMembersFollowWipedDatabase(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	testkit.Bump(t, conn, 30)
	const dir = "/app/workers"
	cl := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	cw := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	live := join(t, cl, dir, "live", group.WithData([]byte("l")))
	// A member whose process ends with the old database: a session of its
	// own that never comes back.
	if _, err := ens.Conn(t).Create(dir+"/gone", []byte("g"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w := watchGroup(t, cw, dir)
	sees(t, live, "gone=g,live=l")
	sees(t, w, "gone=g,live=l")
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return cl.Stats().Replies + cw.Stats().Replies })
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	rec.Wait(t, 45*time.Second, "both views trusted and equal to the server, the live member alone", func(ctx context.Context) error {
		return followed(ctx, conn, dir, "live=l", live, w)
	})
	rec.Check(t, "a member's view and a Watch")
	owned(t, conn, live, cl)
	for _, c := range []*connection.Client{cl, cw} {
		if testkit.SessionHistory(t, c) != 1 {
			t.Fatalf("a client's history after the wipe: %d, want 1", testkit.SessionHistory(t, c))
		}
	}

	// The views follow the new database.
	join(t, cw, dir, "next", group.WithData([]byte("n")))
	sees(t, live, "live=l,next=n")
	sees(t, w, "live=l,next=n")
}

func TestMembersFollowRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	const dir = "/app/workers"
	cl := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	cw := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	live := join(t, cl, dir, "live", group.WithData([]byte("l")))
	ce := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	join(t, ce, dir, "ended", group.WithData([]byte("e")))
	w := watchGroup(t, cw, dir)
	sees(t, w, "ended=e,live=l")
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	// A member the backup holds, whose process ends after it: the
	// restored servers hold its node and session until they expire it.
	ce.Close()
	// A member that joins after the backup, whose process ends in the
	// outage: the restored servers never heard of it.
	if _, err := ens.Conn(t).Create(dir+"/late", []byte("t"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	testkit.Bump(t, conn, 20)
	sees(t, live, "late=t,live=l")
	sees(t, w, "late=t,live=l")
	hearNewest(t, cl, cw)
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return cl.Stats().Replies + cw.Stats().Replies })
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	rec.Wait(t, 45*time.Second, "both views trusted and equal to the server, the live member alone", func(ctx context.Context) error {
		return followed(ctx, conn, dir, "live=l", live, w)
	})
	rec.Check(t, "a member's view and a Watch")
	owned(t, conn, live, cl)
	for _, c := range []*connection.Client{cl, cw} {
		if testkit.SessionHistory(t, c) != 1 {
			t.Fatalf("a client's history after the restore: %d, want 1", testkit.SessionHistory(t, c))
		}
	}
}

// hearNewest makes each client hear the servers' newest zxid, as a client
// that reads does: servers restored from a backup older than that refuse
// to resume its session, and its next one is of a new history.
func hearNewest(t *testing.T, clients ...*connection.Client) {
	t.Helper()
	for _, c := range clients {
		if err := c.Sync(ctxFor(t, 10*time.Second), "/"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeftMemberStaysGoneAfterRestoredBackup: a member leaves after the
// backup while its process goes on, idle (pings only). The restored
// servers hold its node and its session; the client heard, in its pings'
// answers, zxids the restored servers have not reached, so they must not
// resume that session: its node goes when they expire it, and the client
// goes on in a session of a new history.
func TestLeftMemberStaysGoneAfterRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	const dir = "/app/workers"
	// A session timeout long enough for the servers to pass the client's
	// last request's zxid before the client gives its session up.
	cm := open(t, ens.Servers(), connection.WithSessionTimeout(6*time.Second))
	cw := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	left := join(t, cm, dir, "left", group.WithData([]byte("x")))
	w := watchGroup(t, cw, dir)
	sees(t, w, "left=x")
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	if err := left.Close(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	testkit.Bump(t, conn, 20)
	// The member's client hears of the bump by its pings alone.
	replies := cm.Stats().Replies
	zktest.Eventually(t, 10*time.Second, "the member's client pings after the bump", func() error {
		if cm.Stats().Replies <= replies {
			return fmt.Errorf("no answer since")
		}
		return nil
	})
	hearNewest(t, cw)
	sees(t, w, "")
	old := cm.Session().ID()
	conn.Close()

	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	// The restored servers pass the zxid of the member's last request
	// (its delete), not the zxids its pings heard.
	testkit.Bump(t, conn, 5)
	zktest.Eventually(t, 30*time.Second, "the left member's node gone from the restored servers", func() error {
		got, err := onServer(conn, dir)
		if err != nil || got != "" {
			var now int64
			if s := cm.Session(); s != nil {
				now = s.ID()
			}
			return fmt.Errorf("the server holds %q (%v); the member's client is in session %#x (before the restore %#x)", got, err, now, old)
		}
		return nil
	})
	sess, err := cm.WaitSession(ctxFor(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if sess.ID() == old || sess.History() != 1 {
		t.Fatalf("the member's client after the restore: session %#x (before %#x), history %d; want a new session of history 1",
			sess.ID(), old, sess.History())
	}
	rec := testkit.StartRecovery(func() int64 { return cw.Stats().Replies })
	rec.Wait(t, 30*time.Second, "the watch trusted and equal to the server", func(ctx context.Context) error {
		return followed(ctx, conn, dir, "", w)
	})
	rec.Check(t, "a Watch")
}
