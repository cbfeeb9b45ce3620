package semaphore

import (
	"context"
	"errors"
	"math"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// Errors of the semaphore. Match them with errors.Is.
var (
	// ErrNoLeases is returned by TryAcquire when the leases are not
	// available without waiting.
	ErrNoLeases = errors.New("semaphore: no leases available")
	// ErrTooMany is returned when more leases are asked for in one call
	// than the fixed maximum: they could never all be granted.
	ErrTooMany = errors.New("semaphore: more leases asked for than exist")
	// ErrLeaseLost is returned by Release when the lease was lost before.
	// It, and a lost lease's Err, wraps what happened:
	// connection.ErrSuspended, connection.ErrSessionLost or
	// connection.ErrNodeDeleted (see Lease.Err).
	ErrLeaseLost = errors.New("semaphore: lease lost")
	// ErrReleased is the Err of a lease after its Release, and what a
	// second Release returns.
	ErrReleased = errors.New("semaphore: lease released")
	// ErrBadCount means the shared count node does not hold a 4-byte count
	// (the error matches shared.ErrCorrupt too).
	ErrBadCount = errors.New("semaphore: shared count node is not a 4-byte count")
)

// Semaphore is a counting semaphore at a path. Its methods are safe for
// concurrent use; each Acquire call is a participant of its own.
type Semaphore struct {
	client    *connection.Client
	path      string
	max       int
	countPath string        // WithSharedCount, or ""
	count     *shared.Count // at countPath, seeded with max
	data      []byte
}

// Option configures a Semaphore.
type Option func(*Semaphore) error

// WithSharedCount reads the maximum number of leases from the shared
// count at countPath (a shared.Count: Curator's SharedCount, a 4-byte
// big-endian integer, which an empty node holds as 0), and wakes a waiting
// acquirer when it changes. If the node does not exist, Acquire creates it
// with the maximum given to New, as SharedCount's seed.
func WithSharedCount(countPath string) Option {
	return func(s *Semaphore) error {
		if err := connection.ValidatePath(countPath); err != nil {
			return errtext.Errorf("semaphore: shared count: %w", err)
		}
		if countPath == "/" {
			return errtext.Errorf("semaphore: shared count: %w: the root cannot be a count", connection.ErrInvalidPath)
		}
		s.countPath = countPath
		return nil
	}
}

// WithData sets the data of the lease nodes (and of the locks mutex's).
// By default it is the client's DefaultData, the host's address.
func WithData(data []byte) Option {
	return func(s *Semaphore) error {
		s.data = append([]byte{}, data...)
		return nil
	}
}

// New returns a semaphore at path with at most maxLeases leases held at
// once. Nothing is created until Acquire.
func New(c *connection.Client, p string, maxLeases int, opts ...Option) (*Semaphore, error) {
	if c == nil {
		return nil, errtext.Errorf("semaphore: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(p); err != nil {
		return nil, errtext.Errorf("semaphore: %w", err)
	}
	if p == "/" {
		return nil, errtext.Errorf("semaphore: %w: the root cannot be a semaphore", connection.ErrInvalidPath)
	}
	if maxLeases < 1 || maxLeases > math.MaxInt32 {
		return nil, errtext.Errorf("semaphore: %w: maximum of %d leases", connection.ErrInvalidOption, maxLeases)
	}
	s := &Semaphore{client: c, path: p, max: maxLeases, data: connx.Of(c).DefaultData()}
	for _, o := range opts {
		if o == nil {
			return nil, errtext.Errorf("semaphore: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(s); err != nil {
			return nil, err
		}
	}
	if s.countPath != "" {
		var err error
		if s.count, err = shared.NewCount(c, s.countPath, int32(maxLeases)); err != nil {
			return nil, errtext.Errorf("semaphore: shared count: %w", err)
		}
	}
	return s, nil
}

// Path returns the semaphore's path.
func (s *Semaphore) Path() string { return s.path }

func (s *Semaphore) leasesDir() string { return path.Join(s.path, "leases") }

// Acquire blocks until it holds n leases, or ctx is done: all n or none.
// On failure every lease node it made is deleted and the error wraps
// ctx.Err() (or says what else went wrong).
func (s *Semaphore) Acquire(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, true)
}

// TryAcquire takes n leases if they are available now, and otherwise
// returns an error matching ErrNoLeases without waiting (another
// participant acquiring at the same moment counts as unavailable).
func (s *Semaphore) TryAcquire(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, false)
}

func (s *Semaphore) acquire(ctx context.Context, n int, wait bool) ([]*Lease, error) {
	if n < 1 {
		return nil, errtext.Errorf("semaphore: acquire %d leases: %w", n, connection.ErrInvalidOption)
	}
	if s.countPath == "" && n > s.max {
		return nil, errtext.Errorf("semaphore: acquire %d of %d: %w", n, s.max, ErrTooMany)
	}
	// A mutex value of its own: acquirers exclude each other, goroutines
	// of this process included.
	m, err := mutex.New(s.client, path.Join(s.path, "locks"), mutex.WithData(s.data))
	if err != nil {
		return nil, err
	}
	if wait {
		err = m.Lock(ctx)
	} else {
		err = m.TryLock(ctx)
	}
	if errors.Is(err, mutex.ErrLocked) {
		return nil, errtext.Errorf("semaphore: acquire at %s: %w", s.path, ErrNoLeases)
	}
	if err != nil {
		return nil, errtext.Errorf("semaphore: acquire at %s: %w", s.path, err)
	}
	unlock := sync.OnceFunc(func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Unlock(uctx) // a lost hold is ended either way
	})
	defer unlock()
	lim, err := s.limits(ctx)
	if err != nil {
		return nil, errtext.Errorf("semaphore: acquire at %s: %w", s.path, err)
	}
	defer lim.close()
	var leases []*Lease
	fail := func(err error) ([]*Lease, error) {
		for _, l := range leases {
			l.drop()
		}
		return nil, errtext.Errorf("semaphore: acquire %d at %s: %w", n, s.path, err)
	}
	for range n {
		l, err := s.one(ctx, wait, m, lim)
		if err != nil {
			return fail(err)
		}
		leases = append(leases, l)
	}
	// The leases' holds start after the locks mutex is released (a
	// request), so that none is reported whose trusted period ended on the
	// way out.
	unlock()
	for _, l := range leases {
		if err := l.start(ctx); err != nil {
			return fail(err)
		}
	}
	return leases, nil
}

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

// one creates a lease node and waits until it is within the maximum. The
// caller holds the locks mutex m.
func (s *Semaphore) one(ctx context.Context, wait bool, m *mutex.Mutex, lim *limits) (*Lease, error) {
	created, err := s.client.CreateProtected(ctx, path.Join(s.leasesDir(), "lease-"), s.data, connection.EphemeralSequential)
	if err != nil {
		return nil, err
	}
	l := &Lease{sem: s, a: lockcore.Acquired{Path: created.Path, Session: created.Session, Token: created.Czxid}}
	ok := false
	defer func() {
		if !ok {
			l.drop()
		}
	}()
	name := path.Base(created.Path)
	for {
		limit, err := lim.current()
		if err != nil {
			return nil, err
		}
		children, _, w, err := s.client.ChildrenWatch(ctx, s.leasesDir())
		if err != nil {
			return nil, err
		}
		if !slices.Contains(children, name) {
			return nil, errtext.Errorf("%w: lease node %s is gone", ErrLeaseLost, created.Path)
		}
		if len(children) <= limit {
			// Granted. The node's watch ends the lease if someone else
			// deletes the node; its hold starts once the locks mutex is
			// released.
			_, _, own, err := s.client.GetWatch(ctx, created.Path)
			if errors.Is(err, zk.ErrNoNode) {
				return nil, errtext.Errorf("%w: lease node %s is gone", ErrLeaseLost, created.Path)
			}
			if err != nil {
				return nil, err
			}
			l.a.Own = own
			ok = true
			return l, nil
		}
		if !wait {
			return nil, ErrNoLeases
		}
		select {
		case <-w.Done():
		case <-lim.changed:
		case <-created.Session.Done():
			return nil, ErrLeaseLost
		case <-m.Done():
			// The locks mutex can no longer be trusted: another acquirer
			// may add leases. Give up rather than count on a stale view.
			return nil, errtext.Errorf("semaphore: the acquire mutex was lost: %w", mutex.ErrLockLost)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// limits is the maximum number of leases during one acquire: fixed, or
// a shared count followed by a watch.
type limits struct {
	max     int
	watcher *shared.Watcher[int32] // for a shared count, or nil
	changed <-chan shared.Versioned[int32]
	cancel  context.CancelFunc
}

// limits starts following the maximum number of leases for one acquire:
// for a shared count, a watch on it (the node is created with the seed
// if it does not exist, as Curator's SharedCount.start does).
func (s *Semaphore) limits(ctx context.Context) (*limits, error) {
	if s.count == nil {
		return &limits{max: s.max}, nil
	}
	w, err := s.count.Watch(ctx)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(ctx)
	lim := &limits{watcher: w, cancel: cancel}
	if lim.changed, err = w.Listen(lctx); err != nil {
		lim.close()
		return nil, err
	}
	if cur, err := w.Current(); err == nil && !cur.Exists() {
		if _, err := s.count.Initialize(ctx); err != nil {
			lim.close()
			return nil, err
		}
	}
	return lim, nil
}

// current returns the maximum as the watch last saw it. The listener's
// channel wakes the waiter at each change (its first value, the current
// one, wakes it once for nothing).
func (l *limits) current() (int, error) {
	if l.watcher == nil {
		return l.max, nil
	}
	cur, err := l.watcher.Current()
	if errors.Is(err, shared.ErrCorrupt) {
		return 0, errtext.Errorf("%w: %w", ErrBadCount, err)
	}
	if err != nil {
		return 0, err
	}
	return int(cur.Value), nil
}

func (l *limits) close() {
	if l.watcher != nil {
		l.cancel()
		l.watcher.Close()
	}
}

// SetCount writes the shared count (WithSharedCount) as Curator's
// SharedCount does: a 4-byte big-endian integer. It wakes a waiting
// acquirer.
func (s *Semaphore) SetCount(ctx context.Context, n int) error {
	if s.countPath == "" {
		return errtext.Errorf("semaphore: %w: no shared count", connection.ErrInvalidOption)
	}
	if n < 0 || n > math.MaxInt32 {
		return errtext.Errorf("semaphore: %w: count %d", connection.ErrInvalidOption, n)
	}
	if _, err := s.count.Set(ctx, int32(n)); err != nil {
		return errtext.Errorf("semaphore: set count %s: %w", s.countPath, err)
	}
	return nil
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
	lockcore.Abandon(l.sem.client, l.a.Session, l.a.Path, l.a.Token)
}

// Participant is one lease holder as ZooKeeper shows it. Leases lists
// them oldest first.
type Participant struct {
	// Path is the lease's node: "<semaphore>/leases/_c_<uuid>-lease-<seq>"
	// (Curator's InterProcessSemaphoreV2 layout).
	Path string
	// Kind names the layout of the node: "semaphore-lease".
	Kind string
	// Seq is the node's 10-digit sequence number: the order leases were
	// asked for.
	Seq string
	// Data is the node's data: the host's address unless the holder set
	// it (WithData).
	Data []byte
	// Session is the session that owns the node (its ephemeralOwner).
	Session int64
	// Token is the node's czxid: the fencing token of the lease.
	Token int64
	// Created is when the node was created, by the server's clock.
	Created time.Time
}

// Leases lists the leases held at the semaphore at path, oldest first.
func Leases(ctx context.Context, c *connection.Client, p string) ([]Participant, error) {
	if err := connection.ValidatePath(p); err != nil {
		return nil, errtext.Errorf("semaphore: %w", err)
	}
	ps, err := lockcore.Participants(ctx, c, path.Join(p, "leases"), func(k lockcore.Kind) bool { return k == lockcore.Lease })
	if err != nil {
		return nil, errtext.Errorf("semaphore: leases of %s: %w", p, err)
	}
	out := make([]Participant, len(ps))
	for i, c := range ps {
		out[i] = Participant{Path: c.Path, Kind: c.Kind.String(), Seq: c.Seq, Data: c.Data,
			Session: c.Session, Token: c.Token, Created: c.Created}
	}
	return out, nil
}
