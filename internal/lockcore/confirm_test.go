package lockcore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// TestConfirmOfANodeWhoseWatchEndedWithItsSession tests Confirm when the
// watch of the node about to be held ended with its session (expired, or
// the client closed) rather than firing for a change: the attempt failed
// because the session is over, which a recipe restarts from — not because
// someone else deleted the node (ErrNodeGone, which a recipe reports).
func TestConfirmOfANodeWhoseWatchEndedWithItsSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, c *connection.Client, expire func() (int64, error))
		want error
	}{
		{"session expired", func(t *testing.T, _ *connection.Client, expire func() (int64, error)) {
			if _, err := expire(); err != nil {
				t.Fatal(err)
			}
		}, connection.ErrSessionLost},
		{"client closed", func(t *testing.T, c *connection.Client, _ func() (int64, error)) { c.Close() }, connection.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			root := ens.Root(t)
			p := ens.Proxy(t)
			c := open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second))
			ctx := ctxFor(t, time.Minute)
			sess := c.Session()
			node := root + "/own"
			if _, err := c.Create(ctx, node, nil, connection.Ephemeral); err != nil {
				t.Fatal(err)
			}
			_, stat, own, err := c.GetWatch(ctx, node)
			if err != nil {
				t.Fatal(err)
			}
			tc.end(t, c, p.ExpireSession)
			select {
			case <-own.Done():
			case <-ctx.Done():
				t.Fatal("the node's watch did not end with its session")
			}
			_, err = lockcore.Confirm(ctx, c, lockcore.Acquired{Path: node, Session: sess, Token: stat.Czxid, Own: own})
			if errors.Is(err, lockcore.ErrNodeGone) || !errors.Is(err, tc.want) {
				t.Fatalf("Confirm: %v; want an error wrapping %v, not %v", err, tc.want, lockcore.ErrNodeGone)
			}
			if !errors.Is(lockcore.RestartOn(err), lockcore.ErrRestart) && tc.want == connection.ErrSessionLost {
				t.Fatalf("RestartOn(%v) does not restart", err)
			}
		})
	}
}
