package curatorqueue

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/closer"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Queue is a queue in the layout of Curator's DistributedQueue, or of one
// of its variants (NewPriority, NewDelay, NewID): each message is a
// persistent sequential node <path>/queue-<seq> whose data frame one item,
// or a batch (PutMulti), as Curator's ItemSerializer does. Items are
// bytes: what Curator's QueueSerializer made of them, passed through.
// Its methods are safe for concurrent use; each Take is a consumer of its
// own.
type Queue struct {
	client   *connection.Client
	path     string
	kind     kind
	lockPath string
	data     []byte

	ensured atomic.Bool
	c       *closer.Closer[*Message] // what Close ends (close.go)
}

// Option configures a Queue.
type Option func(*Queue) error

// WithLockPath takes messages under locks at lockPath, as Curator's
// QueueBuilder.lockPath does: a consumer locks a message with the
// ephemeral node <lockPath>/<message name>, reads it, and deletes it only
// when Consume is called; a consumer whose session ends before leaves the
// message in the queue for another (at least once). Without a lock path a
// message is deleted as it is taken (at most once: a consumer that dies
// while processing it loses it). Every consumer of a queue, Go's and
// Curator's, must use the same lock path.
func WithLockPath(lockPath string) Option {
	return func(q *Queue) error {
		if err := connection.ValidatePath(lockPath); err != nil {
			return errtext.Errorf("curatorqueue: lock path: %w", err)
		}
		if lockPath == "/" {
			return errtext.Errorf("curatorqueue: %w: the root cannot be a lock path", connection.ErrInvalidPath)
		}
		q.lockPath = lockPath
		return nil
	}
}

// WithData sets the data of this queue's lock nodes (see WithLockPath);
// by default the client's DefaultData, the host's address. Curator
// writes its default data there and never reads them.
func WithData(data []byte) Option {
	return func(q *Queue) error {
		q.data = append([]byte{}, data...)
		return nil
	}
}

// New returns the DistributedQueue at path: messages are taken in the
// order they were put. Nothing is created until a Put or a take.
func New(c *connection.Client, p string, opts ...Option) (*Queue, error) {
	return newQueue(c, p, plainKind, opts)
}

// NewPriority returns the DistributedPriorityQueue at path: messages are
// taken by priority (WithPriority; lower first), then in the order they
// were put. The priority is in the node's name, as Curator encodes it.
func NewPriority(c *connection.Client, p string, opts ...Option) (*Queue, error) {
	return newQueue(c, p, priorityKind, opts)
}

// NewDelay returns the DistributedDelayQueue at path: each message is put
// with the time it is due (WithDelayUntil, in the node's name in
// milliseconds since the Unix epoch), and is never taken before that
// time, read on this process's clock (as Curator reads its own: the
// clocks of the producers and consumers must agree). Due messages are
// taken in the order of their due times.
func NewDelay(c *connection.Client, p string, opts ...Option) (*Queue, error) {
	return newQueue(c, p, delayKind, opts)
}

// NewID returns the DistributedIdQueue at path: each message is put with
// an id (WithID), in the node's name between '|' separators, and Remove
// removes the messages of an id. Messages are taken in the order they
// were put.
func NewID(c *connection.Client, p string, opts ...Option) (*Queue, error) {
	return newQueue(c, p, idKind, opts)
}

func newQueue(c *connection.Client, p string, k kind, opts []Option) (*Queue, error) {
	if err := checkArgs(c, p); err != nil {
		return nil, err
	}
	if k == idKind && strings.Contains(p, separator) {
		return nil, errtext.Errorf("curatorqueue: %w: an id queue's path cannot hold %q", connection.ErrInvalidPath, separator)
	}
	q := &Queue{client: c, path: p, kind: k, data: c.DefaultData()}
	q.c = newCloser()
	for _, o := range opts {
		if o == nil {
			return nil, errtext.Errorf("curatorqueue: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(q); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// Path returns the queue's path.
func (q *Queue) Path() string { return q.path }

// LockPath returns the queue's lock path, "" without one.
func (q *Queue) LockPath() string { return q.lockPath }

func (q *Queue) errorf(op string, err error) error {
	return errtext.Errorf("curatorqueue: %s %s: %w", op, q.path, err)
}

// ensure makes the queue's path and its lock path, with missing parents
// as containers, as Curator's start does.
func (q *Queue) ensure(ctx context.Context) error {
	if q.ensured.Load() {
		return nil
	}
	for _, p := range []string{q.path, q.lockPath} {
		if p == "" {
			continue
		}
		_, err := q.client.Create(ctx, p, nil, connection.Persistent, connection.WithParents())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	q.ensured.Store(true)
	return nil
}

// PutOption configures a Put.
type PutOption func(*putConfig) error

type putConfig struct {
	priority    *int32
	due         *time.Time
	id          *string
	kindOfOpt   kind
	wrongOption bool
}

func (c *putConfig) mark(k kind) {
	if c.kindOfOpt != plainKind && c.kindOfOpt != k {
		c.wrongOption = true
	}
	c.kindOfOpt = k
}

// WithPriority puts a priority queue's message at priority p: lower
// priorities are taken first; 0 unless told.
func WithPriority(p int32) PutOption {
	return func(c *putConfig) error {
		c.mark(priorityKind)
		c.priority = &p
		return nil
	}
}

// WithDelayUntil puts a delay queue's message due at t, which must be
// after the Unix epoch. A delay queue's Put needs it.
func WithDelayUntil(t time.Time) PutOption {
	return func(c *putConfig) error {
		if t.UnixMilli() <= 0 {
			return errtext.Errorf("curatorqueue: due time %v: %w", t, connection.ErrInvalidOption)
		}
		c.mark(delayKind)
		c.due = &t
		return nil
	}
}

// WithID puts an id queue's message with id, not empty; '/' and '|' in
// it become '_' in the node's name, as Curator writes them. An id queue's
// Put needs it.
func WithID(id string) PutOption {
	return func(c *putConfig) error {
		if id == "" {
			return errtext.Errorf("curatorqueue: empty id: %w", connection.ErrInvalidOption)
		}
		c.mark(idKind)
		c.id = &id
		return nil
	}
}

// name returns the prefix of a message's node name under opts.
func (q *Queue) name(opts []PutOption) (string, error) {
	var c putConfig
	for _, o := range opts {
		if o == nil {
			return "", errtext.Errorf("curatorqueue: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(&c); err != nil {
			return "", err
		}
	}
	if c.wrongOption || (c.kindOfOpt != plainKind && c.kindOfOpt != q.kind) {
		return "", errtext.Errorf("%w: a %s takes no %s option", ErrWrongKind, q.kind, c.kindOfOpt)
	}
	switch q.kind {
	case priorityKind:
		var p int32
		if c.priority != nil {
			p = *c.priority
		}
		return itemPrefix + priorityName(p), nil
	case delayKind:
		if c.due == nil {
			return "", errtext.Errorf("%w: a delay queue's put needs WithDelayUntil", ErrWrongKind)
		}
		return itemPrefix + epochName(*c.due), nil
	case idKind:
		if c.id == nil {
			return "", errtext.Errorf("%w: an id queue's put needs WithID", ErrWrongKind)
		}
		return itemPrefix + idName(*c.id), nil
	}
	return itemPrefix, nil
}

// Put adds a message of one item (Curator's put). A sequential create is
// not re-sent after a lost answer: if Put fails with an error matching
// connection.ErrOutcomeUnknown, the message may or may not be in the
// queue. It returns the message's node name.
func (q *Queue) Put(ctx context.Context, item []byte, opts ...PutOption) (string, error) {
	return q.put(ctx, "put", [][]byte{item}, opts)
}

// PutMulti adds one message of several items (Curator's putMulti): they
// are in one node, taken together, and handed to a Curator consumer one
// after the other.
func (q *Queue) PutMulti(ctx context.Context, items [][]byte, opts ...PutOption) (string, error) {
	return q.put(ctx, "put", items, opts)
}

func (q *Queue) put(ctx context.Context, op string, items [][]byte, opts []PutOption) (string, error) {
	cctx, leave, err := q.c.Enter(ctx)
	if err != nil {
		return "", q.errorf(op, err)
	}
	defer leave()
	prefix, err := q.name(opts)
	if err != nil {
		return "", q.errorf(op, err)
	}
	data := encodeItems(items)
	for range 2 {
		if err := q.ensure(cctx); err != nil {
			return "", q.errorf(op, q.c.CallErr(ctx, err))
		}
		created, err := q.client.Create(cctx, path.Join(q.path, prefix), data, connection.PersistentSequential)
		if errors.Is(err, zk.ErrNoNode) {
			q.ensured.Store(false) // the queue's path was deleted
			continue
		}
		if err != nil {
			return "", q.errorf(op, q.c.CallErr(ctx, err))
		}
		return path.Base(created), nil
	}
	return "", q.errorf(op, zk.ErrNoNode)
}
