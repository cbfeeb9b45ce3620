package queue

import (
	"context"
	"errors"
	"path"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/closer"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Errors of the queue. Match them with errors.Is.
var (
	// ErrEmpty is returned by TryTake when no item is available.
	ErrEmpty = errors.New("queue: no item available")
	// ErrItemLost is returned by Consume and Release when the take was
	// lost before: the item is back in the queue, and another worker may
	// process it. It, and a lost take's Err, wraps what happened:
	// connection.ErrSuspended, connection.ErrSessionLost or
	// connection.ErrNodeDeleted (see Item.Err).
	ErrItemLost = errors.New("queue: item lost")
	// ErrFinished is returned by Consume and Release on an item that was
	// consumed or released before, and is its Err (its Context's cause)
	// then.
	ErrFinished = errors.New("queue: item already consumed or released")
	// ErrOutcomeUnknown is returned by Consume and Release, together with
	// the error that says why (which also matches
	// connection.ErrOutcomeUnknown), when the write was sent and no answer
	// came: for Consume, the item may have been removed, or will be
	// delivered again. The take is over either way.
	ErrOutcomeUnknown = errors.New("queue: outcome unknown: the transaction was sent and not answered")
	// ErrInvalidPriority means a priority outside MinPriority..MaxPriority.
	ErrInvalidPriority = errors.New("queue: invalid priority")
	// ErrClosed is returned by every method of a Queue after Close, and
	// by a Put, Take or TryTake that Close ended.
	ErrClosed = errors.New("queue: closed")
)

// Directory names: Kazoo's LockingQueue, and the line of idle Go workers.
const (
	entriesDir = "entries"
	takenDir   = "taken"
	takersDir  = "takers"
)

// Queue is a work queue at a path. Its methods are safe for concurrent
// use; each Take call is a worker of its own.
type Queue struct {
	client  *connection.Client
	path    string
	entries string
	taken   string
	data    []byte
	line    lockcore.Lock // idle workers wait here, one watching the queue

	ensured atomic.Bool
	c       *closer.Closer[*Item] // what Close ends (close.go)

	afterMade    func() // tests: called once a take's taken node is made
	beforeCreate func() // tests: called as a take's taken node is about to be made
}

// Option configures a Queue.
type Option func(*Queue) error

// WithData sets the data of this queue's taken nodes (and of its place in
// the line of idle workers), which Entries shows as the taker. By default
// it is the client's DefaultData, the host's address.
func WithData(data []byte) Option {
	return func(q *Queue) error {
		q.data = append([]byte{}, data...)
		return nil
	}
}

// New returns the queue at path. Nothing is created until Put or Take.
func New(c *connection.Client, p string, opts ...Option) (*Queue, error) {
	if c == nil {
		return nil, errtext.Errorf("queue: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(p); err != nil {
		return nil, errtext.Errorf("queue: %w", err)
	}
	if p == "/" {
		return nil, errtext.Errorf("queue: %w: the root cannot be a queue", connection.ErrInvalidPath)
	}
	q := &Queue{
		client:  c,
		path:    p,
		entries: path.Join(p, entriesDir),
		taken:   path.Join(p, takenDir),
		data:    c.DefaultData(),
	}
	q.c = newCloser()
	for _, o := range opts {
		if o == nil {
			return nil, errtext.Errorf("queue: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(q); err != nil {
			return nil, err
		}
	}
	q.line = lockcore.Lock{
		Client:    c,
		Dir:       path.Join(p, takersDir),
		Name:      "lock-",
		Data:      q.data,
		Accept:    layout.MutexKinds,
		Predicate: lockcore.Predecessor,
		Window:    1,
		Line:      true, // the taken nodes decide who has an item
		Parked:    waiting,
	}
	return q, nil
}

// Path returns the queue's path.
func (q *Queue) Path() string { return q.path }

func (q *Queue) errorf(op string, err error) error {
	return errtext.Errorf("queue: %s %s: %w", op, q.path, err)
}

// ensure makes the entries and taken directories, once: persistent, as
// Kazoo does (it remembers that it made them, so they must stay).
func (q *Queue) ensure(ctx context.Context) error {
	if q.ensured.Load() {
		return nil
	}
	for _, dir := range []string{q.entries, q.taken} {
		if err := q.client.EnsurePath(ctx, dir); err != nil {
			return err
		}
	}
	q.ensured.Store(true)
	return nil
}

// PutOption configures Put.
type PutOption func(*putConfig) error

type putConfig struct{ priority int }

// WithPriority puts the item ahead of every item of a higher number:
// MinPriority (0) first, MaxPriority (999) last, DefaultPriority (100)
// unless told — Kazoo's priorities.
func WithPriority(p int) PutOption {
	return func(c *putConfig) error {
		if p < MinPriority || p > MaxPriority {
			return errtext.Errorf("%w: %d is not in %d..%d", ErrInvalidPriority, p, MinPriority, MaxPriority)
		}
		c.priority = p
		return nil
	}
}

// Put adds an item with data to the end of its priority. A sequential
// create is not retried after a lost connection: if Put fails with a
// connection error, the item may or may not be in the queue (putting it
// again may deliver it twice, which at-least-once allows).
//
// Once the entries directory's sequence numbers are used up (2^31 puts
// since it was made), Put fails with an error matching
// connection.ErrSequenceExhausted, and the item is not in the queue: the
// names would no longer keep the items in order. The queue's directory
// must be deleted and made again. (If a worker took the item in the
// moment before Put withdrew it, Put returns nil: it was delivered.)
func (q *Queue) Put(ctx context.Context, data []byte, opts ...PutOption) error {
	cctx, leave, err := q.c.Enter(ctx)
	if err != nil {
		return q.errorf("put", err)
	}
	defer leave()
	if err := q.put(cctx, data, opts); err != nil {
		return q.errorf("put", q.c.CallErr(ctx, err))
	}
	return nil
}

func (q *Queue) put(ctx context.Context, data []byte, opts []PutOption) error {
	cfg := putConfig{priority: DefaultPriority}
	for _, o := range opts {
		if o == nil {
			return errtext.Errorf("queue: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(&cfg); err != nil {
			return err
		}
	}
	for range 2 {
		if err := q.ensure(ctx); err != nil {
			return err
		}
		created, err := q.client.Create(ctx, path.Join(q.entries, entryName(cfg.priority)), data, connection.PersistentSequential)
		if errors.Is(err, zk.ErrNoNode) {
			q.ensured.Store(false) // someone deleted the directories
			continue
		}
		if err == nil {
			err = q.placed(ctx, created)
		}
		return err
	}
	return errtext.Errorf("%s keeps disappearing: %w", q.entries, zk.ErrNoNode)
}
