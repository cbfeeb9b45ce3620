// Package naive is the herd-prone lock: one ephemeral node per lock, which
// every waiter watches. Each release wakes every waiter, and all of them
// race to create the node again — the "herd effect" ZooKeeper's recipe
// documentation warns about. It is kept on purpose, for comparison with
// recipes/mutex and for teaching; use the mutex for real work.
//
// It is still honest: Lock honours its context, the node is checked to
// belong to the current session, a create whose answer was lost is
// recognised as ours, and a hold has a lost-lock signal and a fencing
// token like the mutex. It is not reentrant, and not fair.
package naive

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Errors of the naive lock. Match them with errors.Is.
var (
	// ErrLocked is returned by TryLock when another participant holds the
	// lock.
	ErrLocked = errors.New("naive: locked by another participant")
	// ErrNotLocked is returned by Unlock when this Lock does not hold it.
	ErrNotLocked = errors.New("naive: not locked")
	// ErrHeld is returned by Lock when this participant holds the lock
	// already: the naive lock is not reentrant.
	ErrHeld = errors.New("naive: already held (not reentrant)")
	// ErrLockLost is returned by Unlock (and Lock) when the hold was lost
	// before the release. It, and a lost hold's Err, wraps what happened:
	// connection.ErrSuspended, connection.ErrSessionLost or
	// connection.ErrNodeDeleted (see Err).
	ErrLockLost = errors.New("naive: lock lost")
	// ErrUnlocked is the Err, and the Context's cause, of a hold that
	// Unlock ended.
	ErrUnlocked = errors.New("naive: unlocked")
)

// Lock is one participant of a naive lock: the node at path itself.
type Lock struct {
	client *connection.Client
	path   string
	data   []byte
	h      *lockcore.Holder
}

// New returns a participant of the naive lock whose node is path.
func New(c *connection.Client, path string) (*Lock, error) {
	if c == nil {
		return nil, errtext.Errorf("naive: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, errtext.Errorf("naive: %w", err)
	}
	if path == "/" {
		return nil, errtext.Errorf("naive: %w: the root cannot be a lock", connection.ErrInvalidPath)
	}
	l := &Lock{client: c, path: path, data: c.DefaultData()}
	l.h = lockcore.NewHolder(c, lockcore.HolderConfig{
		Name:         "naive",
		Path:         path,
		Acquire:      l.acquire,
		Release:      l.release,
		ErrLocked:    ErrLocked,
		ErrNotLocked: ErrNotLocked,
		ErrLockLost:  ErrLockLost,
		ErrUnlocked:  ErrUnlocked,
		ErrHeld:      ErrHeld,
	})
	return l, nil
}

// Path returns the lock node's path.
func (l *Lock) Path() string { return l.path }

// Client returns the client the lock works through.
func (l *Lock) Client() *connection.Client { return l.client }

// Lock blocks until this participant holds the lock or ctx is done.
func (l *Lock) Lock(ctx context.Context) error { return l.h.Lock(ctx, true) }

// TryLock takes the lock if it is free, and otherwise returns an error
// matching ErrLocked.
func (l *Lock) TryLock(ctx context.Context) error { return l.h.Lock(ctx, false) }

// acquire takes the lock, waiting for it when wait is set. The observer
// is told of the wait when the node is first found another's, and of its
// end as acquire returns: with no line to stand in, the wait has no node
// of its own (Participant "") and one contender ahead, the holder.
func (l *Lock) acquire(ctx context.Context, wait bool) (lockcore.Acquired, error) {
	var (
		obs   *lockcore.WaitObs
		begun bool
	)
	for {
		a, ch, err := l.try(ctx)
		if errors.Is(err, errAgain) || errors.Is(err, connection.ErrSessionLost) && ctx.Err() == nil {
			continue // released meanwhile, or try again in the next session
		}
		if err != nil || ch == nil {
			return a, obs.End(err)
		}
		if !wait {
			return lockcore.Acquired{}, lockcore.ErrWouldWait
		}
		if !begun {
			begun = true
			ctx, obs = lockcore.BeginWait(ctx, l.client, connection.Wait{Recipe: "naive", Path: l.path, Ahead: 1})
		}
		// Every waiter watches this one node: each release wakes them all.
		select {
		case <-ch:
		case <-a.Session.Done():
		case <-ctx.Done():
			return lockcore.Acquired{}, obs.End(ctx.Err())
		}
	}
}

// errAgain: the node went between the create and the read; race again.
var errAgain = errors.New("naive: released meanwhile")

// try creates the node or finds whose it is. It returns a confirmed hold,
// or a channel that closes when another holder's node goes.
//
// The node's data are this attempt's own: the client's default data and a
// fresh UUID (connection.Claim). Another participant of this client, in
// the same session, holds a node of the same owner; only the data tell it
// from ours. A create whose answer was lost finds its own node by them, and
// one whose outcome stays unknown is deleted in the background by them.
func (l *Lock) try(ctx context.Context) (lockcore.Acquired, <-chan struct{}, error) {
	sess, err := l.client.WaitSession(ctx)
	if err != nil {
		return lockcore.Acquired{}, nil, err
	}
	data := append(append(append([]byte{}, l.data...), claimMark...), connx.NewUUID()...)
	created, w, err := connx.Of(l.client).Claim(connx.Pin(ctx, sess), l.path, data)
	if errors.Is(err, zk.ErrNoNode) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		// The parent is missing (or our node went at once): make the
		// parents, as containers, and race again.
		if _, perr := l.client.Create(ctx, path.Dir(l.path), nil, connection.Container, connection.WithParents()); perr != nil && !errors.Is(perr, zk.ErrNodeExists) {
			return lockcore.Acquired{}, nil, perr
		}
		return lockcore.Acquired{}, nil, errAgain
	}
	if errors.Is(err, zk.ErrNodeExists) {
		if w == nil {
			return lockcore.Acquired{}, nil, errAgain // it went in between
		}
		return lockcore.Acquired{Session: sess}, w.Done(), nil
	}
	if err != nil {
		return lockcore.Acquired{}, nil, err
	}
	a, err := lockcore.Confirm(ctx, l.client, lockcore.Acquired{Path: l.path, Session: sess, Token: created.Czxid, Own: w})
	if err != nil {
		lockcore.Abandon(l.client, lockcore.Acquired{Path: l.path, Session: sess, Token: created.Czxid})
	}
	return a, nil, err
}

// claimMark joins the node's data: the client's default data, then the
// attempt's UUID.
const claimMark = "\n#claim "

// release deletes the node in the session that created it, and only that
// node: after a lost answer the delete is not sent again unless the node
// at the path is still the one this hold made (by czxid) — another
// participant may have made its own there since (connection.DeleteCreated).
func (l *Lock) release(ctx context.Context, a lockcore.Acquired) error {
	return lockcore.Release(ctx, l.client, a)
}

// Unlock ends the hold and then deletes its node. It returns an error
// matching ErrNotLocked when this participant does not hold it, and one
// matching ErrLockLost when the hold was lost first. Nothing is held when
// it returns, whatever the error (see mutex.Mutex.Unlock).
func (l *Lock) Unlock(ctx context.Context) error { return l.h.Unlock(ctx) }

// Held reports whether this participant holds the lock.
func (l *Lock) Held() bool { return l.h.Held() }

// Token returns the czxid of the lock node of the current hold, or 0.
func (l *Lock) Token() int64 { return l.h.Token() }

// Guard returns a guard of the current hold for connection.Client.Multi:
// the transaction commits only while the hold lasts (see
// mutex.Mutex.Guard); a hold that ended makes Multi fail with
// connection.ErrGuardFailed, nothing applied. The lock's node is at a
// fixed path, which another participant may make again once ours is
// gone: the guard's transaction is written in the hold's session only,
// and only while the hold is on. If someone else deletes the node while it
// is held and another participant takes the lock at once, a transaction
// written before this one heard of the deletion can still commit — as
// with Done; the mutex's sequential nodes have no such window.
func (l *Lock) Guard() *connection.Guard { return l.h.Guard() }

// Done is closed when the current hold can no longer be trusted, or was
// released; when nothing is held it is already closed.
func (l *Lock) Done() <-chan struct{} { return l.h.Done() }

// Context is cancelled when Done closes, with Err as its cause; when
// nothing is held it is already cancelled.
func (l *Lock) Context() context.Context { return l.h.Context() }

// Err returns nil while the current hold lasts, and then why it ended, as
// Context's cause does: ErrUnlocked after Unlock, or ErrLockLost wrapping
// connection.ErrSuspended (suspended under connection.StandardPolicy; the
// session may live on), connection.ErrSessionLost (the session ended) or
// connection.ErrNodeDeleted (another client deleted the node). When
// nothing is held it says why the last hold ended, or matches
// ErrNotLocked if there was none.
func (l *Lock) Err() error { return l.h.Err() }
