package election

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Term is one period of leadership of one candidate.
type Term struct {
	e    *Election
	hold *lockcore.Hold

	mu    sync.Mutex
	ended bool // Resign was called, or the term was ended after its loss
}

// newTerm starts a term. When it is lost its node is deleted in the
// background while its session lives (lockcore.Hold), so that the election
// goes on: under the standard policy a suspended session that comes back
// would otherwise keep the lowest node and leave the election with no
// trusted leader (Curator's LeaderLatch resets on RECONNECTED for the same
// reason).
func (e *Election) newTerm(ctx context.Context, a lockcore.Acquired) *Term {
	return &Term{e: e, hold: lockcore.NewHold(e.client, a, lockcore.HoldConfig{Lost: ErrTermLost, Released: ErrResigned,
		Recipe: "election", Path: e.path, Ctx: ctx})}
}

// end ends a lost term (it does nothing to a term that ended before); it
// sends nothing.
func (t *Term) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		t.ended = true
		_ = t.hold.End(context.Background(), nil)
	}
}

// Done is closed when leadership can no longer be trusted under the
// connection's error policy, or after Resign.
func (t *Term) Done() <-chan struct{} { return t.hold.Done() }

// Context is the term's: cancelled when Done closes, with Err as its
// cause.
func (t *Term) Context() context.Context { return t.hold.Context() }

// Err returns nil while the term lasts, and then why it ended, as
// Context's cause does: ErrResigned after Resign, ErrPreempted (with
// ErrResigned) when the candidate gave way to a higher priority
// (WithPreemption), or ErrTermLost wrapping what happened first —
//   - connection.ErrSuspended: the connection was suspended under
//     connection.StandardPolicy; the session may live on, but another
//     candidate may lead soon;
//   - connection.ErrSessionLost: the session ended (expired, cut off for
//     its timeout, or the client closed: connection.ErrClosed too);
//   - connection.ErrNodeDeleted: another client deleted the term's node.
func (t *Term) Err() error { return t.hold.Cause() }

// Token is the term's fencing token: the czxid of its node, strictly
// increasing across successive leaders of the election.
func (t *Term) Token() int64 { return t.hold.Token }

// Guard returns a guard of the term for connection.Client.Multi: the
// transaction commits only while the term lasts — its node still there,
// in its session, and the term not resigned or lost — all or nothing. A
// leader that keeps its state in ZooKeeper writes it so, and a deposed
// leader's write, however late, never lands:
//
//	_, err := client.Multi(ctx, term.Guard(), &zk.SetDataRequest{Path: "/app/state", Data: s, Version: -1})
//
// A term that ended makes Multi fail with connection.ErrGuardFailed (and
// ErrTermLost or ErrResigned), nothing applied.
func (t *Term) Guard() *connection.Guard { return t.hold.Guard() }

// Node is the path of the term's node.
func (t *Term) Node() string { return t.hold.Path }

// Resign ends the term and then deletes its node, so that the next
// candidate leads. The term is over before the delete is sent — Done is
// closed, whatever the answer — so no other candidate can lead while its
// Done is open. It returns an error matching ErrTermLost when the term was
// lost before (its node went with its session, or is being deleted), and
// ErrResigned when it was resigned before. If the delete's answer never
// came (ctx ended first, or the connection was lost), the error wraps
// connection.ErrOutcomeUnknown and the node is deleted in the background
// while its session lives.
func (t *Term) Resign(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		if errors.Is(t.hold.Cause(), ErrResigned) {
			return t.e.errorf("resign", t.hold.Cause()) // ErrResigned, or ErrPreempted with it
		}
		return t.e.errorf("resign", t.hold.Cause())
	}
	t.ended = true
	if err := t.hold.End(ctx, t.e.core.Release); err != nil {
		return t.e.errorf("resign", err)
	}
	return nil
}
