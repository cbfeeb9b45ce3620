package partition

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Errors of the partitioner. Match them with errors.Is.
var (
	// ErrClosed means the Partitioner was closed.
	ErrClosed = errors.New("partition: closed")
	// ErrRebalance is why a share's Done closed when the party's members
	// changed: the set is split again once it is released.
	ErrRebalance = errors.New("partition: members changed")
	// ErrItemLost is why an item's hold ended when it could no longer be
	// trusted. Another member may take the item from then on. The error
	// (Item.Err) also wraps what happened: connection.ErrSuspended (its
	// connection suspended under the standard policy; the session may live
	// on), connection.ErrSessionLost (its session was lost) or
	// connection.ErrNodeDeleted (its lock node deleted by someone else).
	ErrItemLost = errors.New("partition: item lost")
	// ErrReleased is the cause of an item's context after its share was
	// released.
	ErrReleased = errors.New("partition: released")
)

// State is a Partitioner's state, as Kazoo's SetPartitioner names them.
type State int

const (
	// Allocating: waiting for the party to be stable, then taking the
	// items of this member's share.
	Allocating State = iota + 1
	// Acquired: every item of the share is held (Acquire returns it).
	Acquired
	// Release: the share must be given back (its Done is closed): the
	// members changed, or an item was lost. Release it to allocate again.
	Release
	// Failure: the Partitioner has stopped for good (closed, or the
	// client closed); Err says why.
	Failure
)

func (s State) String() string {
	switch s {
	case Allocating:
		return "ALLOCATING"
	case Acquired:
		return "ACQUIRED"
	case Release:
		return "RELEASE"
	case Failure:
		return "FAILURE"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Defaults, as Kazoo's.
const (
	// DefaultTimeBoundary is how long the party must be unchanged before
	// the set is split, unless WithTimeBoundary says otherwise.
	DefaultTimeBoundary = 30 * time.Second
)

// Option configures a Partitioner.
type Option func(*options) error

type options struct {
	identifier string
	boundary   time.Duration
	split      Func
}

// WithIdentifier sets this member's identifier in the party: a node name
// (it is part of the party node's name), unique in the party. By default
// "<hostname>-<pid>-<8 hex>", Kazoo's default with a random part, so that
// several Partitioners of one process are different members.
func WithIdentifier(id string) Option {
	return func(o *options) error {
		if err := checkName("identifier", id); err != nil {
			return err
		}
		o.identifier = id
		return nil
	}
}

// WithTimeBoundary sets how long the party must be unchanged before the
// set is split (DefaultTimeBoundary unless set; Kazoo's time_boundary).
func WithTimeBoundary(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return errtext.Errorf("partition: %w: time boundary %v", connection.ErrInvalidOption, d)
		}
		o.boundary = d
		return nil
	}
}

// WithFunc sets the partition function (KazooSplit unless set).
func WithFunc(f Func) Option {
	return func(o *options) error {
		if f == nil {
			return errtext.Errorf("partition: %w: nil partition function", connection.ErrInvalidOption)
		}
		o.split = f
		return nil
	}
}

// Partitioner is one member of a party sharing a set of items: see the
// package documentation. Its methods are safe for concurrent use.
type Partitioner struct {
	client *connection.Client
	path   string
	items  []string
	opts   options

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	exited chan struct{} // closed when the worker has returned

	mu       sync.Mutex
	state    State
	share    *Share // the current share: Acquired, or Release until released
	err      error  // why it failed (Failure)
	changed  chan struct{}
	party    party           // the party as the group's view shows it (follow)
	closing  context.Context // Close's, for the releases the worker makes then
	closeErr error           // what the worker's releases and leaving at Close gave
}

// New joins the party of the partition at path and starts sharing items
// among its members, in a goroutine of the Partitioner's own; it returns
// at once, Allocating. Acquire waits for this member's share. The items
// are lock directories' names: each must be a node name. Close leaves.
func New(client *connection.Client, path string, items []string, opts ...Option) (*Partitioner, error) {
	if client == nil {
		return nil, errtext.Errorf("partition: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, errtext.Errorf("partition: %w", err)
	}
	for _, it := range items {
		if err := checkName("item", it); err != nil {
			return nil, err
		}
	}
	o := options{boundary: DefaultTimeBoundary, split: KazooSplit}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("partition: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.identifier == "" {
		host, _ := os.Hostname()
		o.identifier = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), connx.NewUUID()[:8])
		if checkName("identifier", o.identifier) != nil {
			o.identifier = fmt.Sprintf("%d-%s", os.Getpid(), connx.NewUUID()[:8])
		}
	}
	p := &Partitioner{
		client:  client,
		path:    path,
		items:   normalize(items),
		opts:    o,
		exited:  make(chan struct{}),
		state:   Allocating,
		changed: make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.run()
	return p, nil
}

// Path returns the partition's path.
func (p *Partitioner) Path() string { return p.path }

// Identifier returns this member's identifier in the party.
func (p *Partitioner) Identifier() string { return p.opts.identifier }

// Items returns the set shared, sorted.
func (p *Partitioner) Items() []string { return append([]string(nil), p.items...) }

// partyPath and lockPath are Kazoo's: "<path>/party", "<path>/locks/<item>".
func (p *Partitioner) partyPath() string           { return path.Join(p.path, "party") }
func (p *Partitioner) lockPath(item string) string { return path.Join(p.path, "locks", item) }

// State returns the current state and a channel closed at the next change.
func (p *Partitioner) State() (State, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state, p.changed
}

// Err returns why the Partitioner failed (state Failure), or nil.
func (p *Partitioner) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Acquire waits until this member's share is held (state Acquired) and
// returns it; every call returns the same share until it is released.
// A share whose Done is closed must be released (Share.Release) before
// the next one is allocated: in the Release state Acquire returns that
// share (Done closed) until it is released, and then waits for the next. It fails with ctx's error, or with the cause of the Failure state
// (matching ErrClosed after Close).
func (p *Partitioner) Acquire(ctx context.Context) (*Share, error) {
	for {
		p.mu.Lock()
		state, share, err, changed := p.state, p.share, p.err, p.changed
		p.mu.Unlock()
		switch {
		case (state == Acquired || state == Release) && share != nil && !share.isReleased():
			// Its Done may be closed already (always, in the Release
			// state): it is the caller's to release all the same, for the
			// worker waits for that — a share whose Done closed before
			// any caller saw it is handed out, not left to wait for a
			// Release no one can call.
			return share, nil
		case state == Failure:
			return nil, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, errtext.Errorf("partition: acquire %s: %w", p.path, ctx.Err())
		}
	}
}

// setState moves to s (with share, or the failure's err) and wakes the
// waits.
func (p *Partitioner) setState(s State, share *Share, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setStateLocked(s, share, err)
}

func (p *Partitioner) setStateLocked(s State, share *Share, err error) {
	if p.state == Failure {
		return
	}
	p.state, p.share, p.err = s, share, err
	close(p.changed)
	p.changed = make(chan struct{})
}

// Close stops sharing: the share, if any, is released (its items' Done
// closed first, then their lock nodes deleted), the party left, and the
// worker stopped. ctx bounds the deletes; nodes not deleted by then go in
// the background, or with the session. The state is Failure from then on,
// with ErrClosed. Close is idempotent.
func (p *Partitioner) Close(ctx context.Context) error {
	p.mu.Lock()
	again := p.closing != nil
	if !again {
		p.closing = ctx
	}
	p.mu.Unlock()
	p.cancel()
	select {
	case <-p.exited:
	case <-ctx.Done():
		return errtext.Errorf("partition: close %s: %w (the rest goes on in the background)", p.path, ctx.Err())
	}
	p.setState(Failure, nil, errtext.Errorf("partition: %s: %w", p.path, ErrClosed))
	if again {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closeErr
}
