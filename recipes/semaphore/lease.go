package semaphore

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// start begins the hold of a granted lease. A lease is reported only with
// a hold whose period is still trusted: if the period Confirm saw ends
// before the hold starts, it confirms again. The node stays the lease's
// while its session lives, and it was counted all along.
func (l *Lease) start(ctx context.Context) error {
	for {
		a, err := lockcore.Confirm(ctx, l.sem.client, l.a)
		if errors.Is(err, lockcore.ErrNodeGone) {
			return errtext.Errorf("%w: %w", ErrLeaseLost, err)
		}
		if err != nil {
			return err
		}
		hold := lockcore.NewHold(l.sem.client, a, lockcore.HoldConfig{Lost: ErrLeaseLost, Released: ErrReleased,
			Recipe: "semaphore", Path: l.sem.path, Ctx: ctx})
		if !hold.Lost() {
			l.a, l.hold = a, hold
			return nil
		}
		hold.Stop()
		l.a = a // confirm again: a new period, or the node's fate (Confirm)
	}
}

// Lease is one granted lease.
type Lease struct {
	sem  *Semaphore
	a    lockcore.Acquired
	hold *lockcore.Hold

	mu       sync.Mutex
	released bool
}

// Done is closed when the lease can no longer be trusted (its session's
// trust ended under the connection's error policy), or was released.
func (l *Lease) Done() <-chan struct{} { return l.hold.Done() }

// Context is cancelled when Done closes, with Err as its cause.
func (l *Lease) Context() context.Context { return l.hold.Context() }

// Err returns nil while the lease lasts, and then why it ended, as
// Context's cause does: ErrReleased after Release, or ErrLeaseLost
// wrapping connection.ErrSuspended (suspended under
// connection.StandardPolicy; the session may live on),
// connection.ErrSessionLost (the session ended) or
// connection.ErrNodeDeleted (another client deleted the lease node).
func (l *Lease) Err() error { return l.hold.Cause() }

// Token returns the lease node's czxid: a fencing token that grows with
// every lease granted at this semaphore.
func (l *Lease) Token() int64 { return l.a.Token }

// Guard returns a guard of the lease for connection.Client.Multi: the
// transaction commits only while the lease lasts — its node still there,
// in its session, and the lease not released or lost — all or nothing. A
// lease that ended makes Multi fail with connection.ErrGuardFailed (and
// ErrLeaseLost when it was lost), nothing applied. Other leases of the
// semaphore may commit beside it.
func (l *Lease) Guard() *connection.Guard { return l.hold.Guard() }

// Node returns the lease node's path.
func (l *Lease) Node() string { return l.a.Path }

// Release gives the lease back: the lease ends (Done closes) and then its
// node is deleted, in its session. It returns an error matching
// ErrReleased if it was released before, and one matching ErrLeaseLost if
// it was lost first (its node goes with its session, or is deleted in the
// background). Whatever the answer, the lease is over when Release
// returns: if the delete's answer never came (ctx ended first, or the
// connection was lost), the error wraps connection.ErrOutcomeUnknown and
// the node is deleted in the background while its session lives.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return errtext.Errorf("semaphore: release %s: %w", l.a.Path, ErrReleased)
	}
	l.released = true
	if err := l.hold.End(ctx, func(ctx context.Context, a lockcore.Acquired) error {
		return lockcore.Release(ctx, l.sem.client, a)
	}); err != nil {
		return errtext.Errorf("semaphore: release %s: %w", l.a.Path, err)
	}
	return nil
}

// drop deletes the node of a lease that was never handed out.
func (l *Lease) drop() {
	if l.hold != nil {
		l.hold.Stop()
	}
	lockcore.Abandon(l.sem.client, l.a)
}
