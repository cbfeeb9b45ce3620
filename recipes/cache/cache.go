package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
)

// Errors of the cache. Match them with errors.Is.
var (
	// ErrClosed means the cache was closed.
	ErrClosed = errors.New("cache: closed")
	// ErrSuspended is the Err of an Untrusted event sent because the
	// client's connection was suspended: the view may miss changes until
	// it is back. (A lost session's error wraps connection.ErrSessionLost,
	// a closed client's connection.ErrClosed.)
	ErrSuspended = errors.New("cache: connection suspended")
)

// Cache is an in-memory view of a node, a directory or a subtree, kept
// current by one worker goroutine. Its methods are safe for concurrent
// use.
type Cache struct {
	client *connection.Client
	root   string
	opts   options

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the worker, its reads, the listeners

	// mu guards the view and the trust state: the worker writes them,
	// readers and listeners read them. The view is the worker's entries
	// that are published (entry.published): the worker changes those fields,
	// and the entries' children, only while it holds mu.
	mu          sync.RWMutex
	published   int // entries published: the view's nodes
	listeners   map[*listener]struct{}
	initialized bool
	trusted     bool
	done        chan struct{} // closed when the trust period ends; closed while untrusted
	began       chan struct{} // closed when a trust period begins
	lastErr     error         // why the last trust period ended
	closed      bool
	gone        chan struct{} // closed when the client is closed: no trust will come
	clientErr   error         // then, the client's error; the worker writes it, under mu

	initDone chan struct{} // closed at Initialized

	syncs chan chan error // Sync requests to the worker

	inbox inbox                // fired watches, from the connection's hooks to the worker
	sink  connx.Sink           // the watches of bulk reads (watches.go); nil with WithRecursiveWatch
	sub   *connx.PersistentSub // with WithRecursiveWatch: the recursive watch's subscription
	table watchTable           // the sink's watches, in the entries (table.go)
	w     *worker

	reads, syncReads, watches atomic.Int64
}

// New starts a cache of the node at path and, unless WithMaxDepth says
// otherwise, everything under it, and returns at once; Initialized closes
// when the first full load is in. The node need not exist. Close stops the
// cache. A path that is not valid gives an error wrapping
// connection.ErrInvalidPath, a bad option one wrapping
// connection.ErrInvalidOption.
func New(client *connection.Client, path string, opts ...Option) (*Cache, error) {
	if client == nil {
		return nil, errtext.Errorf("cache: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, errtext.Errorf("cache: %w", err)
	}
	o := options{maxDepth: -1, concurrency: DefaultConcurrency}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("cache: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	c := &Cache{
		client:    client,
		root:      path,
		opts:      o,
		listeners: map[*listener]struct{}{},
		done:      chanx.Closed,
		began:     make(chan struct{}),
		gone:      make(chan struct{}),
		initDone:  make(chan struct{}),
		syncs:     make(chan chan error),
	}
	c.inbox.wake = make(chan struct{}, 1)
	if o.recursive {
		sub, err := connx.Of(client).AddPersistentSink(path, true, func(ev zk.Event) { c.inbox.push(fired{path: ev.Path, ev: ev, recursive: true}) })
		if err != nil {
			if errors.Is(err, connx.ErrWatchModeConflict) {
				err = watch.ErrModeConflict
			}
			return nil, errtext.Errorf("cache: new %s: %w", path, err)
		}
		c.sub = sub
	} else {
		c.sink = connx.Of(client).NewWatchSinkTable(&c.table, func(path string, ev zk.Event) { c.inbox.push(fired{path: path, ev: ev}) })
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.w = newWorker(c)
	c.table.mu.Lock()
	c.table.root = c.w.root
	c.table.mu.Unlock()
	inboxes.Store(c.w.root, &c.inbox)
	c.wg.Add(1)
	go c.w.run()
	return c, nil
}

// Path returns the path of the cache's root.
func (c *Cache) Path() string { return c.root }

// Get returns the node at path, if the view holds it.
func (c *Cache) Get(path string) (Node, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.find(path)
	if e == nil {
		return Node{}, false
	}
	return e.node(path), true // path is e's: lookup found it by its names
}

// find returns the published entry of the node at path, or nil; c.mu is
// held.
func (c *Cache) find(path string) *entry {
	if e := c.w.lookup(path); e != nil && e.published {
		return e
	}
	return nil
}

// Children returns the sorted names of the cached children of the node at
// path; ok is false when the view does not hold that node. A node beyond
// WithMaxDepth, or one the Selector does not descend into, has none.
func (c *Cache) Children(path string) (names []string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.find(path)
	if e == nil {
		return nil, false
	}
	for _, k := range e.children() {
		if k.published {
			names = append(names, k.name) // sorted
		}
	}
	return names, true
}

// Snapshot returns the whole view as an immutable value. It copies the
// view's tree, each node's name and Stat (not its data): O(nodes).
func (c *Cache) Snapshot() Snapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.snapshotLocked()
}

func (c *Cache) snapshotLocked() Snapshot {
	s := &snapshot{root: c.root, initialized: c.initialized, trusted: c.trusted}
	root := c.w.root
	if !root.published {
		return Snapshot{s}
	}
	// Breadth first: an entry's published children after the nodes
	// already copied, consecutive. Only a published entry's children can
	// be published.
	s.nodes = make([]snapNode, 0, c.published)
	ents := make([]*entry, 0, c.published)
	add := func(e *entry) {
		s.nodes = append(s.nodes, snapNode{name: e.name, data: e.bytes, stat: e.stat(), err: e.nodeErr()})
		ents = append(ents, e)
	}
	add(root)
	for i := 0; i < len(ents); i++ {
		start := len(s.nodes)
		for _, k := range ents[i].children() {
			if k.published {
				add(k)
			}
		}
		s.nodes[i].kids, s.nodes[i].end = int32(start), int32(len(s.nodes))
	}
	return Snapshot{s}
}

// Initialized returns a channel closed once the first full load is in:
// the root and every node that load found under it (nothing, if the root
// is absent).
func (c *Cache) Initialized() <-chan struct{} { return c.initDone }

// Untrusted returns a channel that is closed when the current trust
// period of the view ends: the connection is suspended, the session is
// lost, the client or the cache is closed. Take it when the period begins
// (see Trust); while the view is untrusted it returns a closed channel. A
// new period has a new channel: the view is trusted again after a
// suspension, and its Untrusted channel with it.
func (c *Cache) Untrusted() <-chan struct{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.done
}

// Err returns why the last trust period ended, or nil if none has; once
// the client is closed, the client's error (also when the view was not
// trusted then: before its first trust period, or while suspended).
func (c *Cache) Err() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.lastErr
}

// Trust waits until the view is trusted — initialized, and following the
// server — and returns that trust period's Untrusted channel. It fails with
// ctx's error, ErrClosed, or an error wrapping connection.ErrClosed when
// the client is closed (before the view was ever trusted too); with
// WithRecursiveWatch, an error wrapping watch.ErrUnsupported when the
// server does not take persistent watches.
func (c *Cache) Trust(ctx context.Context) (<-chan struct{}, error) {
	for {
		c.mu.RLock()
		closed, trusted, done, began, clientErr := c.closed, c.trusted, c.done, c.began, c.clientErr
		c.mu.RUnlock()
		switch {
		case closed:
			return nil, errtext.Errorf("cache: trust %s: %w", c.root, ErrClosed)
		case trusted:
			return done, nil
		case clientErr != nil:
			return nil, errtext.Errorf("cache: trust %s: %w", c.root, clientErr)
		}
		select {
		case <-began:
		case <-c.gone:
		case <-ctx.Done():
			return nil, errtext.Errorf("cache: trust %s: %w", c.root, ctx.Err())
		case <-c.ctx.Done():
		}
	}
}

// Sync waits until the view holds every change committed under the root
// before Sync was called: it syncs the client's server with the leader,
// then waits for the reads of every change notified until then. It fails
// with ctx's error, ErrClosed, or an error wrapping connection.ErrClosed
// when the client is closed.
func (c *Cache) Sync(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case c.syncs <- done:
	case <-ctx.Done():
		return errtext.Errorf("cache: sync %s: %w", c.root, ctx.Err())
	case <-c.ctx.Done():
		return errtext.Errorf("cache: sync %s: %w", c.root, ErrClosed)
	}
	select {
	case err := <-done:
		if err != nil {
			return errtext.Errorf("cache: sync %s: %w", c.root, err)
		}
		return nil
	case <-ctx.Done():
		return errtext.Errorf("cache: sync %s: %w", c.root, ctx.Err())
	case <-c.ctx.Done():
		return errtext.Errorf("cache: sync %s: %w", c.root, ErrClosed)
	}
}

// Stats counts what a cache holds and what it cost.
type Stats struct {
	// Nodes is the number of nodes in the view.
	Nodes int
	// Reads is the number of reads sent (get, exists, children), retries
	// by the client's policy not counted.
	Reads int64
	// Syncs is the number of syncs sent.
	Syncs int64
	// Watches is the number of the cache's watches pending: at most one
	// data watch and one child watch per cached node; with
	// WithRecursiveWatch, 1 while the recursive watch is set on the
	// client's connection, else 0.
	Watches int64
}

// Stats returns the cache's counters since New.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	n := c.published
	c.mu.RUnlock()
	return Stats{Nodes: n, Reads: c.reads.Load(), Syncs: c.syncReads.Load(), Watches: c.watches.Load()}
}

// Close stops the cache and waits for its worker, its reads and its
// listeners (whose channels close). The view stays readable. The watches
// the cache set stay on the server until they fire (go-zookeeper cannot
// remove a watch); a new cache of the same nodes on the same client shares
// them. With WithRecursiveWatch, Close takes the recursive watch off the
// server instead (unless another recipe of the client shares it), waiting
// a few seconds at most for the answer, and returns an error if the
// server refused or did not answer in time; ZooKeeper 3.8's removeWatches
// also removes the client's one-shot watches of the root's path. Close is
// idempotent: later calls return nil.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	inboxes.Delete(c.w.root)
	if c.sink != nil {
		c.sink.Close()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeBound)
	defer cancel()
	if err := connx.Of(c.client).RemovePersistent(ctx, c.sub); err != nil {
		return errtext.Errorf("cache: close %s: %w", c.root, err)
	}
	return nil
}

// removeBound bounds Close's wait for the server to take the recursive
// watch off.
const removeBound = 10 * time.Second
