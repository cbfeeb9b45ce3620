package rwlock

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

// Errors of the read/write lock. Match them with errors.Is.
var (
	// ErrLocked is returned by TryLock when the side cannot be taken
	// without waiting.
	ErrLocked = errors.New("rwlock: locked by another participant")
	// ErrNotLocked is returned by Unlock when the side is not held.
	ErrNotLocked = errors.New("rwlock: not locked")
	// ErrLockLost is returned by Lock and Unlock when the side's hold was
	// lost (its Done closed) before; the hold is then ended. It, and a
	// lost hold's Err, wraps what happened: connection.ErrSuspended,
	// connection.ErrSessionLost or connection.ErrNodeDeleted (see
	// Side.Err).
	ErrLockLost = errors.New("rwlock: lock lost")
	// ErrUnlocked is the Err, and the Context's cause, of a side's hold
	// that Unlock ended.
	ErrUnlocked = errors.New("rwlock: unlocked")
	// ErrUpgrade is returned at once by the write side's Lock while this
	// RWMutex holds the read side: the writer would wait for itself.
	ErrUpgrade = errors.New("rwlock: write lock asked while holding the read lock (upgrade)")
)

// Curator's markers, in place of the mutex's "lock-".
const (
	readName  = "__READ__"
	writeName = "__WRIT__"
)

// RWMutex is one participant of a read/write lock at a path: a read side
// and a write side. Goroutines that must exclude each other use separate
// RWMutex values, as processes do.
type RWMutex struct {
	client *connection.Client
	path   string
	read   *Side
	write  *Side
}

// Side is one side of an RWMutex: the read lock or the write lock.
type Side struct {
	rw   *RWMutex
	core lockcore.Lock
	h    *lockcore.Holder
}

// Option configures an RWMutex.
type Option func(*RWMutex) error

// WithData sets the data of both sides' nodes. By default it is the
// client's DefaultData, the host's address, as in Curator.
func WithData(data []byte) Option {
	return func(rw *RWMutex) error {
		rw.read.core.Data = append([]byte{}, data...)
		rw.write.core.Data = append([]byte{}, data...)
		return nil
	}
}

// New returns a participant of the read/write lock at path. Nothing is
// created until a side is locked.
func New(c *connection.Client, p string, opts ...Option) (*RWMutex, error) {
	if c == nil {
		return nil, errtext.Errorf("rwlock: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(p); err != nil {
		return nil, errtext.Errorf("rwlock: %w", err)
	}
	if p == "/" {
		return nil, errtext.Errorf("rwlock: %w: the root cannot be a lock", connection.ErrInvalidPath)
	}
	rw := &RWMutex{client: c, path: p}
	side := func(name string, pred lockcore.Predicate) *Side {
		return &Side{rw: rw, core: lockcore.Lock{
			Client: c, Dir: p, Name: name, Data: c.DefaultData(),
			Accept: layout.RWKinds, Predicate: pred,
			Recipe: "rwlock",
		}}
	}
	rw.read, rw.write = side(readName, lockcore.Shared), side(writeName, lockcore.Exclusive)
	// A downgrade puts a read node at its writer's place, ahead of writers
	// that listed before it: a writer must list again after every
	// deletion rather than take the 0-RTT handoff. (A reader need not: an
	// inserted reader never blocks it.)
	rw.write.core.Relist = true
	rw.write.core.Window = 2
	for _, o := range opts {
		if o == nil {
			return nil, errtext.Errorf("rwlock: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(rw); err != nil {
			return nil, err
		}
	}
	for s, acquire := range map[*Side]func(context.Context, bool) (lockcore.Acquired, error){
		rw.read: rw.acquireRead, rw.write: rw.acquireWrite,
	} {
		s.h = lockcore.NewHolder(c, lockcore.HolderConfig{
			Name:         "rwlock",
			Path:         p,
			Acquire:      acquire,
			Release:      s.core.Release,
			ErrLocked:    ErrLocked,
			ErrNotLocked: ErrNotLocked,
			ErrLockLost:  ErrLockLost,
			ErrUnlocked:  ErrUnlocked,
		})
	}
	return rw, nil
}

// Path returns the lock's path.
func (rw *RWMutex) Path() string { return rw.path }

// ReadLock returns the read side; the same value on every call.
func (rw *RWMutex) ReadLock() *Side { return rw.read }

// WriteLock returns the write side; the same value on every call.
func (rw *RWMutex) WriteLock() *Side { return rw.write }

// acquireWrite refuses an upgrade, then queues as a writer.
func (rw *RWMutex) acquireWrite(ctx context.Context, wait bool) (lockcore.Acquired, error) {
	if rw.read.h.Held() {
		return lockcore.Acquired{}, ErrUpgrade
	}
	return rw.write.core.Acquire(ctx, wait)
}

// acquireRead downgrades when the write side is held, and otherwise
// queues as a reader.
//
// The downgrade's safety: the read node is made while the write hold
// surely lasts (under the write side's gate, its Done open), so at every
// moment from then on either our writer's node or our reader's node sits
// at the writer's place in the queue; every writer behind keeps waiting,
// and readers behind may share, as they may with any reader.
func (rw *RWMutex) acquireRead(ctx context.Context, wait bool) (lockcore.Acquired, error) {
	var a lockcore.Acquired
	held, err := rw.write.h.Use(ctx, func(w lockcore.Acquired) error {
		c, ok := layout.Parse(path.Base(w.Path))
		if !ok {
			return errtext.Errorf("rwlock: the write node %s has no sequence", w.Path)
		}
		created, err := rw.client.CreateProtected(ctx, path.Join(rw.path, readName+c.Seq), rw.read.core.Data, connection.Ephemeral)
		if err != nil {
			return err // CreateProtected leaves nothing behind
		}
		kept := false
		defer func() {
			if !kept {
				// Every path that made the read node deletes it: a read
				// node nobody holds would block every writer.
				lockcore.Abandon(rw.client, lockcore.Acquired{Path: created.Path, Session: created.Session, Token: created.Czxid, Unique: true})
			}
		}()
		if created.Session != w.Session {
			// Made in a later session than the write hold's: that hold is
			// gone, and a downgrade from it would be a new, unordered reader.
			return ErrLockLost
		}
		own, err := lockcore.WatchOwn(ctx, rw.client, created.Path, created.Czxid)
		if errors.Is(err, lockcore.ErrNodeGone) {
			return ErrLockLost // gone, or made again by another
		}
		if err != nil {
			return err
		}
		a, err = lockcore.Confirm(ctx, rw.client, lockcore.Acquired{Path: created.Path, Session: created.Session, Token: created.Czxid, Unique: true, Own: own})
		kept = err == nil
		return err
	})
	if held || err != nil {
		return a, err
	}
	return rw.read.core.Acquire(ctx, wait)
}

// Path returns the lock's path.
func (s *Side) Path() string { return s.rw.path }

// Client returns the client the lock works through.
func (s *Side) Client() *connection.Client { return s.rw.client }

// Lock blocks until this side is held or ctx is done; see the mutex's
// Lock for the contract. The write side returns an error matching
// ErrUpgrade at once while this RWMutex holds the read side.
func (s *Side) Lock(ctx context.Context) error { return s.h.Lock(ctx, true) }

// TryLock takes this side if it can be taken without waiting, and
// otherwise returns an error matching ErrLocked.
func (s *Side) TryLock(ctx context.Context) error { return s.h.Lock(ctx, false) }

// Unlock releases one hold of this side; the last ends the hold and then
// deletes its node, and nothing of the side is held when it returns,
// whatever the error (see mutex.Mutex.Unlock). A lost hold is ended and the
// error matches ErrLockLost.
func (s *Side) Unlock(ctx context.Context) error { return s.h.Unlock(ctx) }

// Held reports whether this side is held (possibly a lost hold no Lock or
// Unlock has noticed yet: see Done).
func (s *Side) Held() bool { return s.h.Held() }

// Done is closed when this side's hold can no longer be trusted, or was
// released; when the side is not held it is already closed.
func (s *Side) Done() <-chan struct{} { return s.h.Done() }

// Context is cancelled when Done closes, with Err as its cause.
func (s *Side) Context() context.Context { return s.h.Context() }

// Err returns nil while this side's hold lasts, and then why it ended, as
// Context's cause does: ErrUnlocked after Unlock, or ErrLockLost wrapping
// connection.ErrSuspended (suspended under connection.StandardPolicy; the
// session may live on), connection.ErrSessionLost (the session ended) or
// connection.ErrNodeDeleted (another client deleted the node). When the
// side is not held it says why its last hold ended, or matches
// ErrNotLocked if there was none.
func (s *Side) Err() error { return s.h.Err() }

// Token returns the fencing token of this side's hold: its node's czxid.
// Write tokens strictly increase across successive writers; 0 when not
// held.
func (s *Side) Token() int64 { return s.h.Token() }

// Guard returns a guard of this side's current hold for
// connection.Client.Multi: the transaction commits only while the hold
// lasts (see mutex.Mutex.Guard); a hold that ended makes Multi fail with
// connection.ErrGuardFailed, nothing applied. The write side's guard fences
// a write against every other participant. The read side's excludes
// writers only: other readers may commit beside it.
func (s *Side) Guard() *connection.Guard { return s.h.Guard() }

// Node returns the path of this side's node, or "".
func (s *Side) Node() string { return s.h.Node() }

// Participant is one contender of the lock as ZooKeeper shows it.
// Participants lists them in queue order.
type Participant struct {
	// Path is the contender's node: "<lock>/_c_<uuid>-__READ__<seq>" or
	// "...-__WRIT__<seq>" for a Go or Curator side, "<hex>__rlock__<seq>"
	// or "<hex>__lock__<seq>" for Kazoo's.
	Path string
	// Kind names the layout of the node: "read-lock" and "write-lock"
	// (zkrecipes and Curator), "kazoo-read-lock" and "kazoo-lock".
	Kind string
	// Seq is the node's 10-digit sequence number: the queue order.
	Seq string
	// Data is the node's data: the host's address unless the contender
	// set it (WithData).
	Data []byte
	// Session is the session that owns the node (its ephemeralOwner).
	Session int64
	// Token is the node's czxid: the fencing token of its hold.
	Token int64
	// Created is when the node was created, by the server's clock.
	Created time.Time
}

// Participants lists the readers and writers of the lock at path in
// queue order, Curator's and Kazoo's included.
func Participants(ctx context.Context, c *connection.Client, p string) ([]Participant, error) {
	if err := connection.ValidatePath(p); err != nil {
		return nil, errtext.Errorf("rwlock: %w", err)
	}
	ps, err := lockcore.Participants(ctx, c, p, layout.RWKinds)
	if err != nil {
		return nil, errtext.Errorf("rwlock: participants of %s: %w", p, err)
	}
	out := make([]Participant, len(ps))
	for i, c := range ps {
		out[i] = Participant{Path: c.Path, Kind: c.Kind.String(), Seq: c.Seq, Data: c.Data,
			Session: c.Session, Token: c.Token, Created: c.Created}
	}
	return out, nil
}
