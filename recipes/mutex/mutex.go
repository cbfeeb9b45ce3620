package mutex

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Errors of the mutex. Match them with errors.Is.
var (
	// ErrLocked is returned by TryLock when another participant holds the
	// lock.
	ErrLocked = errors.New("mutex: locked by another participant")
	// ErrNotLocked is returned by Unlock when this Mutex does not hold the
	// lock.
	ErrNotLocked = errors.New("mutex: not locked")
	// ErrLockLost means the hold ended before Unlock: it could no longer
	// be trusted, and another participant may have held the lock since.
	// Unlock (or Lock on the lost hold) returns it, and a lost hold's Err
	// and Context's cause wrap it. The error also wraps what happened —
	// connection.ErrSuspended, connection.ErrSessionLost or
	// connection.ErrNodeDeleted (docs/safety.md, "Why a hold ended").
	ErrLockLost = errors.New("mutex: lock lost")
	// ErrUnlocked is the Err, and the Context's cause, of a hold that
	// Unlock ended.
	ErrUnlocked = errors.New("mutex: unlocked")
)

// lockName is Curator's mutex node name: "<prefix>lock-<seq>".
const lockName = "lock-"

// Mutex is one participant of a distributed lock at a path.
//
// A Mutex value is one participant. It is reentrant: Lock on a Mutex that
// holds the lock increments a hold count and returns at once, and the
// last Unlock releases it. So goroutines that must exclude each other use
// separate Mutex values, as processes do; a Mutex is safe for concurrent
// use in that sense — its methods may be called from many goroutines, and
// they all share its one hold.
//
// A hold that is lost (Done closed) is never re-entered: the next Lock or
// Unlock ends it and returns an error matching ErrLockLost, whatever the
// hold count, and the Lock after that takes the lock anew.
type Mutex struct {
	client *connection.Client
	path   string
	core   lockcore.Lock
	h      *lockcore.Holder

	onRevoke func()
}

// Option configures a Mutex.
type Option func(*Mutex) error

// WithData sets the lock node's data, which Participants and Curator's
// getParticipantNodes show. By default it is the client's DefaultData, the
// host's address, as in Curator.
func WithData(data []byte) Option {
	return func(m *Mutex) error {
		m.core.Data = append([]byte{}, data...)
		return nil
	}
}

// WithRevocation makes the lock revocable: while it is held, its node is
// watched, and when another process asks for it (Revoke, or Curator's
// Revoker.attemptRevoke), onRevoke is called in a goroutine of its own. It
// decides: usually it finishes the work and calls Unlock.
func WithRevocation(onRevoke func()) Option {
	return func(m *Mutex) error {
		if onRevoke == nil {
			return errtext.Errorf("mutex: nil revocation listener: %w", connection.ErrInvalidOption)
		}
		m.onRevoke = onRevoke
		return nil
	}
}

// New returns a participant of the lock at path. The path is validated
// here; nothing is created until Lock.
func New(c *connection.Client, path string, opts ...Option) (*Mutex, error) {
	if c == nil {
		return nil, errtext.Errorf("mutex: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, errtext.Errorf("mutex: %w", err)
	}
	if path == "/" {
		return nil, errtext.Errorf("mutex: %w: the root cannot be a lock", connection.ErrInvalidPath)
	}
	m := &Mutex{
		client: c,
		path:   path,
		core: lockcore.Lock{
			Client:    c,
			Dir:       path,
			Name:      lockName,
			Data:      c.DefaultData(),
			Accept:    layout.MutexKinds,
			Predicate: lockcore.Exclusive,
			Window:    2,
			Recipe:    "mutex",
		},
	}
	for _, o := range opts {
		if o == nil {
			return nil, errtext.Errorf("mutex: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(m); err != nil {
			return nil, err
		}
	}
	m.h = lockcore.NewHolder(c, lockcore.HolderConfig{
		Name:         "mutex",
		Path:         path,
		Core:         &m.core,
		Release:      m.core.Release,
		ErrLocked:    ErrLocked,
		ErrNotLocked: ErrNotLocked,
		ErrLockLost:  ErrLockLost,
		ErrUnlocked:  ErrUnlocked,
		OnRevoke:     m.onRevoke,
	})
	return m, nil
}

// Path returns the lock's path.
func (m *Mutex) Path() string { return m.path }

// Client returns the client the mutex works through.
func (m *Mutex) Client() *connection.Client { return m.client }

// Lock blocks until this participant holds the lock or ctx is done. If it
// already holds it, Lock counts one more hold and returns at once; if that
// hold was lost, Lock ends it and returns an error matching ErrLockLost.
// On failure its node is deleted and the error wraps ctx.Err() (or says
// what else went wrong). Lock never returns nil with Done already closed.
func (m *Mutex) Lock(ctx context.Context) error { return m.h.Lock(ctx, true) }

// TryLock takes the lock if no other participant holds it, and otherwise
// returns an error matching ErrLocked without waiting. It still makes
// requests, and may wait for them up to ctx.
func (m *Mutex) TryLock(ctx context.Context) error { return m.h.Lock(ctx, false) }

// Unlock releases one hold; the last one ends the hold — Done closes —
// and then deletes the lock node. It returns an error matching
// ErrNotLocked when this Mutex holds no lock, and one matching ErrLockLost
// when the hold was lost first (Done closed): the hold then ends whatever
// its count, and its node goes with its session or is deleted in the
// background. After the last Unlock nothing is held, whatever the error:
// if the delete's answer never came, or ctx was done (even before the
// call), the error says so (connection.ErrOutcomeUnknown, ctx's error) and
// the node is deleted in the background while its session lives.
func (m *Mutex) Unlock(ctx context.Context) error { return m.h.Unlock(ctx) }

// Held reports whether this Mutex holds the lock (possibly a lost hold
// that was not unlocked yet: see Done).
func (m *Mutex) Held() bool { return m.h.Held() }

// Token returns the fencing token of the current hold: the czxid of the
// lock node, strictly increasing across successive holders of this lock.
// It is 0 when the lock is not held.
func (m *Mutex) Token() int64 { return m.h.Token() }

// Guard returns a guard of the current hold for connection.Client.Multi:
// the transaction commits only while this hold lasts — its node still
// there, in its session, and the hold not released or lost — all or
// nothing:
//
//	_, err := client.Multi(ctx, m.Guard(), &zk.SetDataRequest{Path: "/config/x", Data: v, Version: -1})
//
// A hold that ended makes Multi fail with connection.ErrGuardFailed
// (and ErrLockLost, or ErrNotLocked when nothing is held), with nothing
// applied. The guard is of the hold held now (a reentrant Lock does not
// change it); it fails once that hold ends, even if the lock is taken
// again. For state kept outside ZooKeeper, use Token (docs/safety.md,
// "Writes fenced by a hold").
func (m *Mutex) Guard() *connection.Guard { return m.h.Guard() }

// Node returns the path of the current hold's lock node, or "".
func (m *Mutex) Node() string { return m.h.Node() }

// Done returns a channel that is closed when the current hold can no
// longer be trusted under the connection's error policy, or is released.
// When the lock is not held, the channel is already closed.
func (m *Mutex) Done() <-chan struct{} { return m.h.Done() }

// Context returns a context for the work done under the current hold: it
// is cancelled when Done closes, with Err as its cause. When the lock is
// not held it is already cancelled.
func (m *Mutex) Context() context.Context { return m.h.Context() }

// Err returns nil while the current hold lasts, and then why it ended, as
// Context's cause does: an error matching ErrUnlocked after Unlock, or
// ErrLockLost and what happened — connection.ErrSuspended (the connection
// was suspended under connection.StandardPolicy; the session may live
// on), connection.ErrSessionLost (the session ended; connection.ErrClosed
// too when the client was closed) or connection.ErrNodeDeleted (another
// client deleted the lock node). A hold has one cause, the first. When
// nothing is held Err says why the last hold ended, or matches
// ErrNotLocked if there was none.
func (m *Mutex) Err() error { return m.h.Err() }

// Participant is one contender of the lock as ZooKeeper shows it.
// Participants lists the holder first, then the waiters in queue order.
type Participant struct {
	// Path is the contender's node: "<lock>/_c_<uuid>-lock-<seq>" for a Go
	// or Curator mutex, "<lock>/<hex>__lock__<seq>" for Kazoo's Lock.
	Path string
	// Kind names the layout of the node: "mutex" (zkrecipes and Curator),
	// "kazoo-lock" or "kazoo-read-lock" (a Kazoo reader excludes a mutex
	// holder too).
	Kind string
	// Seq is the node's 10-digit sequence number: the queue order.
	Seq string
	// Data is the node's data: the host's address unless the contender
	// set it (WithData; Curator's default is the same).
	Data []byte
	// Session is the session that owns the node (its ephemeralOwner).
	Session int64
	// Token is the node's czxid: the fencing token of its hold.
	Token int64
	// Created is when the node was created, by the server's clock.
	Created time.Time
}

func participants(ps []lockcore.Participant) []Participant {
	out := make([]Participant, len(ps))
	for i, p := range ps {
		out[i] = Participant{Path: p.Path, Kind: p.Kind.String(), Seq: p.Seq, Data: p.Data,
			Session: p.Session, Token: p.Token, Created: p.Created}
	}
	return out
}

// Participants lists the holder and the waiters of the lock in queue
// order, with their data — Go and Curator mutexes and Kazoo locks alike.
func (m *Mutex) Participants(ctx context.Context) ([]Participant, error) {
	return Participants(ctx, m.client, m.path)
}

// Participants lists the contenders of the lock at path in queue order.
func Participants(ctx context.Context, c *connection.Client, path string) ([]Participant, error) {
	if err := connection.ValidatePath(path); err != nil {
		return nil, errtext.Errorf("mutex: %w", err)
	}
	ps, err := lockcore.Participants(ctx, c, path, layout.MutexKinds)
	if err != nil {
		return nil, errtext.Errorf("mutex: participants of %s: %w", path, err)
	}
	return participants(ps), nil
}

// Revoke asks the participant whose node is nodePath (from Participants)
// to release, as Curator's Revoker does. A holder made WithRevocation (Go
// or Curator) hears it; what it does is up to it.
func Revoke(ctx context.Context, c *connection.Client, nodePath string) error {
	if err := connection.ValidatePath(nodePath); err != nil {
		return errtext.Errorf("mutex: %w", err)
	}
	if _, ok := layout.Parse(path.Base(nodePath)); !ok || nodePath == "/" {
		return errtext.Errorf("mutex: revoke: %w: %q is not a lock node", connection.ErrInvalidPath, nodePath)
	}
	if err := lockcore.Revoke(ctx, c, nodePath); err != nil {
		return errtext.Errorf("mutex: revoke %s: %w", nodePath, err)
	}
	return nil
}
