package connection_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestAbandonedProtectedNodeDeletedAfterAnOutageLongerThanItsSession: a
// protected create whose caller gave up and whose answer was lost made a
// persistent node; the servers then stay out of reach for four session
// timeouts, so the session expires while the cleanup waits. Once they are
// back, the cleanup deletes the node in the next session, and none says
// it gave up.
func TestAbandonedProtectedNodeDeletedAfterAnOutageLongerThanItsSession(t *testing.T) {
	logs := testkit.NewLogs()
	root, ctx, p, c, obs := proxiedDir(t, connection.WithSessionTimeout(2*time.Second), connection.WithLogger(logs.Logger()))
	timeout := c.Session().Timeout()
	p.DropReplies()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := c.CreateProtected(cctx, root+"/d/n-", nil, connection.PersistentSequential)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("create whose answer was dropped: %v, want DeadlineExceeded", err)
	}
	zktest.Eventually(t, 5*time.Second, "the create applied", func() error {
		kids, _, err := obs.Children(root + "/d")
		if err != nil || len(kids) != 1 {
			return fmt.Errorf("children %v, %v: want the one node", kids, err)
		}
		return nil
	})
	p.Blackhole()
	time.Sleep(4 * timeout)
	p.Restore()
	testkit.NoChildrenLeft(t, obs, root+"/d", 20*time.Second, func(string) bool { return false })
	if gaveUp := logs.With("connection: background cleanup gave up"); len(gaveUp) != 0 {
		t.Errorf("a cleanup gave up: %v", gaveUp)
	}
}

// abandonProtected makes a protected create of root+"/d/n-" in mode
// whose answer is dropped and whose caller gives up; it returns once the
// node is there, with its name. Replies stay dropped.
func abandonProtected(t *testing.T, ctx context.Context, p *zktest.Proxy, c *connection.Client, obs *zk.Conn, dir string, mode connection.Mode) string {
	t.Helper()
	before, _, err := obs.Children(dir)
	if err != nil {
		t.Fatal(err)
	}
	p.DropReplies()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = c.CreateProtected(cctx, dir+"/n-", nil, mode)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("create whose answer was dropped: %v, want DeadlineExceeded", err)
	}
	var made string
	zktest.Eventually(t, 5*time.Second, "the create applied", func() error {
		kids, _, err := obs.Children(dir)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if !slices.Contains(before, k) {
				made = k
				return nil
			}
		}
		return fmt.Errorf("children %v: no new node", kids)
	})
	return made
}

// TestAbandonedProtectedCleanupDeletesOnlyItsOwnNode: while a protected
// create given up by one participant waits to be cleaned up, another
// participant of the same client and another client make nodes of the
// same name ("n-": protected, plain sequential, and one whose name
// starts like a protected node's). The cleanup deletes the abandoned
// node only: every other node is still there after it.
func TestAbandonedProtectedCleanupDeletesOnlyItsOwnNode(t *testing.T) {
	root, ctx, p, c, obs := proxiedDir(t, connection.WithSessionTimeout(4*time.Second))
	ens := shared.Ensemble(t)
	c2 := open(t, ens.Servers())
	dir := root + "/d"
	abandoned := abandonProtected(t, ctx, p, c, obs, dir, connection.PersistentSequential)
	other := make(chan error, 1)
	var otherMade connection.Created
	go func() { // a participant of the same client, answered once replies pass
		var err error
		otherMade, err = c.CreateProtected(ctx, dir+"/n-", []byte("b"), connection.PersistentSequential)
		other <- err
	}()
	var keep []string
	made, err := c2.CreateProtected(ctx, dir+"/n-", nil, connection.PersistentSequential)
	if err != nil {
		t.Fatal(err)
	}
	keep = append(keep, lastName(made.Path))
	for _, name := range []string{"n-", connection.ProtectedPrefix + "n-", abandoned[:len(connection.ProtectedPrefix)+8] + "n-"} {
		got, err := c2.Create(ctx, dir+"/"+name, nil, connection.PersistentSequential)
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, lastName(got))
	}
	p.Restore()
	if err := <-other; err != nil {
		t.Fatalf("the other participant's create: %v", err)
	}
	keep = append(keep, lastName(otherMade.Path))
	zktest.Eventually(t, 20*time.Second, "the abandoned node deleted", func() error {
		if ok, _, err := obs.Exists(dir + "/" + abandoned); err != nil || ok {
			return fmt.Errorf("%s still there (%v)", abandoned, err)
		}
		return nil
	})
	time.Sleep(c.Session().Timeout()) // a cleanup that went on would have gone on by now
	kids, _, err := obs.Children(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kids)
	slices.Sort(keep)
	if !slices.Equal(kids, keep) {
		t.Fatalf("children after the cleanup %v, want %v", kids, keep)
	}
}

// TestAbandonedProtectedCleanupRequestsBoundedWhileUnreachable: while the
// servers stay out of reach (refused, or silent) for five session
// timeouts, the cleanup of an abandoned create waits rather than spins:
// the client sends a bounded number of requests, and deletes the node
// once they are back.
func TestAbandonedProtectedCleanupRequestsBoundedWhileUnreachable(t *testing.T) {
	for _, fault := range []string{"cut", "blackhole"} {
		t.Run(fault, func(t *testing.T) {
			var rec testkit.Recorder
			root, ctx, p, c, obs := proxiedDir(t, connection.WithSessionTimeout(2*time.Second), connection.WithObserver(rec.Observer()))
			timeout := c.Session().Timeout()
			abandonProtected(t, ctx, p, c, obs, root+"/d", connection.PersistentSequential)
			if fault == "cut" {
				p.Cut()
			} else {
				p.Blackhole()
			}
			from := len(rec.Requests())
			time.Sleep(5 * timeout)
			sent := len(rec.Requests()) - from
			p.Restore()
			// Each round of the policy sends at most its 11 attempts of a
			// sync, and rounds are a third of a session timeout apart.
			const bound = 16 * 11
			t.Logf("%d requests in %v out of reach", sent, 5*timeout)
			if sent > bound {
				t.Errorf("%d requests sent in %v out of reach, want at most %d", sent, 5*timeout, bound)
			}
			testkit.NoChildrenLeft(t, obs, root+"/d", 20*time.Second, nil)
		})
	}
}

// TestAbandonedProtectedCleanupEndsAtClose: a cleanup still waiting for
// unreachable servers ends when the client closes: Close returns
// promptly, no goroutine is left, and nothing says it gave up.
func TestAbandonedProtectedCleanupEndsAtClose(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	p := ens.Proxy(t)
	obs := ens.Conn(t)
	before := goleak.IgnoreCurrent()
	logs := testkit.NewLogs()
	c, err := connection.Open(ctx, p.Servers(), connection.WithSessionTimeout(2*time.Second), connection.WithLogger(logs.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePath(ctx, root+"/d"); err != nil {
		t.Fatal(err)
	}
	abandonProtected(t, ctx, p, c, obs, root+"/d", connection.PersistentSequential)
	p.Cut()
	time.Sleep(3 * c.Session().Timeout())
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		testkit.LogGoroutines(t, "Close hung")
		t.Fatal("Close did not return with a cleanup waiting")
	}
	p.Restore()
	testkit.VerifyNoGoroutinesSince(t, before)
	if gaveUp := logs.With("connection: background cleanup gave up"); len(gaveUp) != 0 {
		t.Errorf("a cleanup ended by Close said it gave up: %v", gaveUp)
	}
}

func lastName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }
