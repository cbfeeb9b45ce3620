package semaphore

import (
	"context"
	"errors"
	"math"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
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
	s := &Semaphore{client: c, path: p, max: maxLeases, data: c.DefaultData()}
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
	leases, err := s.grant(ctx, n, wait)
	if err != nil {
		return nil, err
	}
	for _, l := range leases {
		if err := l.start(ctx); err != nil {
			for _, l := range leases {
				l.drop()
			}
			return nil, errtext.Errorf("semaphore: acquire %d at %s: %w", n, s.path, err)
		}
	}
	return leases, nil
}

// grant makes n lease nodes within the maximum, all or none, and returns
// them with their nodes' watches set and no hold started: the holds start
// after the locks mutex is released (a request), so that none is reported
// whose trusted period ended on the way out.
func (s *Semaphore) grant(ctx context.Context, n int, wait bool) ([]*Lease, error) {
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
	lw := &leaseWait{ctx: ctx}
	fail := func(err error) ([]*Lease, error) {
		for _, l := range leases {
			l.drop()
		}
		lw.obs.End(err)
		return nil, errtext.Errorf("semaphore: acquire %d at %s: %w", n, s.path, err)
	}
	for range n {
		l, err := s.one(lw, wait, m, lim)
		if err != nil {
			return fail(err)
		}
		leases = append(leases, l)
	}
	unlock()
	lw.obs.End(nil)
	return leases, nil
}

// leaseWait is an acquirer's wait for leases, told to the observer
// (Recipe "semaphore") when one of its lease nodes first finds the
// semaphore full, and ended when the acquirer's leases are all granted or
// it gives up. Ahead is the number of leases that must be released before
// its lease fits. Acquirers behind it wait for the locks mutex, which it
// holds meanwhile: they are told as that mutex's waits.
type leaseWait struct {
	ctx   context.Context // the caller's, or the wait's once it began
	obs   *lockcore.WaitObs
	begun bool
}

// begin tells the observer that the lease at node waits behind ahead
// leases, the first time only.
func (lw *leaseWait) begin(s *Semaphore, node string, ahead int) {
	if lw.begun {
		return
	}
	lw.begun = true
	lw.ctx, lw.obs = lockcore.BeginWait(lw.ctx, s.client, connection.Wait{Recipe: "semaphore", Path: s.path, Participant: node, Ahead: ahead})
}

// one creates a lease node and waits until it is within the maximum. The
// caller holds the locks mutex m.
func (s *Semaphore) one(lw *leaseWait, wait bool, m *mutex.Mutex, lim *limits) (*Lease, error) {
	ctx := lw.ctx
	created, err := s.client.CreateProtected(ctx, path.Join(s.leasesDir(), "lease-"), s.data, connection.EphemeralSequential)
	if err != nil {
		return nil, err
	}
	l := &Lease{sem: s, a: lockcore.Acquired{Path: created.Path, Session: created.Session, Token: created.Czxid, Unique: true}}
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
			own, err := lockcore.WatchOwn(ctx, s.client, created.Path, created.Czxid)
			if errors.Is(err, lockcore.ErrNodeGone) {
				return nil, errtext.Errorf("%w: %v", ErrLeaseLost, err)
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
		lw.begin(s, created.Path, len(children)-limit)
		ctx = lw.ctx
		select {
		case <-w.Done():
		case <-lim.changed:
		case <-created.Session.Done():
			return nil, ErrLeaseLost
		case <-m.Done():
			// The locks mutex can no longer be trusted: another acquirer
			// may add leases. Give up rather than count on a stale view.
			cause := m.Err()
			if !errors.Is(cause, mutex.ErrLockLost) {
				cause = mutex.ErrLockLost
			}
			return nil, errtext.Errorf("semaphore: the acquire mutex was lost: %w", cause)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
