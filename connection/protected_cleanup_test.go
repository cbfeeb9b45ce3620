package connection_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
