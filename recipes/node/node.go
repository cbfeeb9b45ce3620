package node

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Errors of the node. Match them with errors.Is.
var (
	// ErrClosed means the Node was closed.
	ErrClosed = errors.New("node: closed")
	// ErrNotStarted is returned by the waits of a Node that was not
	// started.
	ErrNotStarted = errors.New("node: not started")
	// ErrStarted is returned by a second Start.
	ErrStarted = errors.New("node: already started")
	// ErrInUse is returned by Start when another Node of the same client
	// keeps the same path: one client is one session, and a session
	// cannot tell two of its participants' nodes at one path apart.
	ErrInUse = errors.New("node: the path is kept by another Node of this client")
	// ErrSuspended is why the node is absent while the client's
	// connection is suspended under the standard error policy: the node
	// may go at any moment, and the client would not hear of it.
	// It wraps connection.ErrSuspended.
	ErrSuspended = fmt.Errorf("node: %w", connection.ErrSuspended)
	// ErrDeleted is why the node is absent after someone else deleted it;
	// it is made again at once. It wraps connection.ErrNodeDeleted.
	ErrDeleted = fmt.Errorf("node: %w by someone else", connection.ErrNodeDeleted)
	// ErrOccupied is why the node is absent while the path holds a node
	// that is not this Node's: another session's ephemeral node (which
	// goes with its session), a persistent node where an ephemeral one is
	// wanted, or, for a persistent kind, a node this Node did not make
	// (there before Start, or made by someone else after ours was
	// deleted; WithAdoptExisting takes it instead) — the last two stay
	// until someone deletes them. The Node waits for it to go, never
	// writes or deletes it, and then makes its own.
	ErrOccupied = errors.New("node: the path holds a node that is not this one's")
)

// Node keeps one znode present with given data: made again in each new
// session, made again when someone deletes it, with the newest data. Its
// methods are safe for concurrent use. See the package documentation.
type Node struct {
	client *connection.Client
	base   string // the path given to New
	mode   connection.Mode
	ttl    time.Duration
	keep   bool   // Close leaves the node (TTLNode's, which its TTL ends)
	adopt  bool   // a persistent node found at the path is kept, whoever made it (WithAdoptExisting)
	guid   string // sequential modes: the protected id, for the Node's whole life
	recipe string // the observer's name of its presence periods

	ctx    context.Context // ends at Close: stops the worker's waits and reads
	cancel context.CancelFunc
	wake   chan struct{} // new data for the worker (one slot)
	exited chan struct{} // closed when the worker has returned

	mu       sync.Mutex
	started  bool
	closed   bool
	gaveUp   bool // Close stopped waiting for the worker
	data     []byte
	gen      uint64 // the generation of data: each SetData adds one
	wrote    uint64 // the newest generation the node is known to hold
	failGen  uint64 // the generation whose write the server refused
	failErr  error
	actual   string // the node's path ("" for a sequential node not made yet)
	created  bool   // the node was present once
	refusal  error  // the server's refusal to make the node, until it makes it
	finished error  // why the worker stopped before Close: the client was closed
	present  bool
	done     chan struct{}   // closed when the presence ends; closed while absent
	why      error           // why the node is absent (nil before the first try)
	changed  chan struct{}   // closed and replaced at every change of the above
	left     held            // what the worker held when it returned
	pending  []*guardedWrite // SetData with a guard, in order, for the worker
}

// New returns a Node that will keep a node at path with data; nothing is
// made until Start. Nil data is the client's default data (the host's
// address unless connection.WithDefaultData says otherwise), as for every
// recipe's nodes. For a sequential mode, path names the parent and the
// name's prefix: "/members/m-" makes "/members/_c_<uuid>-m-0000000007". A
// bad path gives an error wrapping connection.ErrInvalidPath; a bad option
// or data too large for a request, connection.ErrInvalidOption or
// connection.ErrDataTooLarge.
func New(client *connection.Client, path string, data []byte, opts ...Option) (*Node, error) {
	if client == nil {
		return nil, errtext.Errorf("node: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, errtext.Errorf("node: %w", err)
	}
	if path == "/" {
		return nil, errtext.Errorf("node: %w: the root cannot be kept", connection.ErrInvalidPath)
	}
	o := options{mode: DefaultMode}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("node: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if data == nil {
		data = client.DefaultData()
	}
	n := &Node{
		client:  client,
		base:    path,
		mode:    o.mode,
		ttl:     o.ttl,
		adopt:   o.adopt,
		recipe:  o.recipe,
		data:    slices.Clone(data),
		gen:     1,
		wake:    make(chan struct{}, 1),
		exited:  make(chan struct{}),
		done:    chanx.Closed,
		changed: make(chan struct{}),
	}
	if n.recipe == "" {
		n.recipe = "node"
	}
	if n.mode.Sequential() {
		n.guid = connection.ProtectedPrefix + connx.NewUUID() + "-"
	} else {
		n.actual = path
	}
	if err := n.checkData(data); err != nil {
		return nil, errtext.Errorf("node: new %s: %w", path, err)
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	return n, nil
}

// checkData refuses data that would not fit in a create of the node
// (connection.ErrDataTooLarge).
func (n *Node) checkData(data []byte) error {
	p := n.base
	if n.mode.Sequential() {
		p = path.Join(path.Dir(n.base), n.guid+path.Base(n.base)+"0000000000")
	}
	return connx.Of(n.client).CheckData(p, data)
}

// Start begins keeping the node, in a goroutine of the Node's own, and
// returns at once; WaitForInitialCreate waits for the node. It fails with
// ErrStarted the second time, ErrClosed after Close, and ErrInUse while
// another Node of the same client keeps the same path.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return errtext.Errorf("node: start %s: %w", n.base, ErrClosed)
	case n.started:
		return errtext.Errorf("node: start %s: %w", n.base, ErrStarted)
	}
	if !n.mode.Sequential() {
		if err := register(n); err != nil {
			return err
		}
	}
	n.started = true
	w := &worker{n: n, own: held{path: n.actual}}
	go w.run()
	return nil
}

// Path returns the node's path: the path given to New, or for a
// sequential mode the name the server gave it, "" until it is made. A
// sequential node keeps its name when it is made again, unless a node of
// someone else's holds it.
func (n *Node) Path() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.actual
}

// Data returns the data the node holds, or will hold when it is next
// made: the newest given to New or SetData.
func (n *Node) Data() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.data)
}

// Untrusted returns a channel that is closed when the node's current
// presence ends: it was deleted, its session was lost, the client's
// connection was suspended (under connection.StandardPolicy), or the Node
// was closed. While the node is absent it returns a closed channel; Trust
// waits for the next presence, which has a channel of its own. Err says
// why it ended.
func (n *Node) Untrusted() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.done
}

// Err returns why the node is absent, or nil while it is present (and
// before Start). The error matches ErrDeleted, ErrSuspended, ErrOccupied,
// ErrClosed, connection.ErrSessionLost, or is the server's refusal to make
// the node.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.present {
		return nil
	}
	return n.why
}

// Trust waits until the node is present — made, or found, in the current
// session, which the client trusts — and returns that presence's
// Untrusted channel, open when Trust returns. It fails with ctx's error, ErrClosed,
// or ErrNotStarted.
func (n *Node) Trust(ctx context.Context) (<-chan struct{}, error) {
	for {
		n.mu.Lock()
		started, closed, present, done, changed, finished := n.started, n.closed, n.present, n.done, n.changed, n.finished
		n.mu.Unlock()
		switch {
		case closed:
			return nil, errtext.Errorf("node: trust %s: %w", n.base, ErrClosed)
		case !started:
			return nil, errtext.Errorf("node: trust %s: %w", n.base, ErrNotStarted)
		case present:
			return done, nil
		case finished != nil:
			return nil, finished
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, errtext.Errorf("node: trust %s: %w", n.base, ctx.Err())
		}
	}
}

// WaitForInitialCreate waits until the node was present once since Start
// (made, or found already there and the Node's: see the package
// documentation), as Curator's waitForInitialCreate does,
// and returns nil then, even if it has gone again since. It returns early
// with the server's refusal when the server refuses to make the node (no
// permission, TTL nodes not enabled, an ephemeral parent...): the Node
// keeps trying, but the caller learns at once what is wrong. It fails with
// ctx's error, ErrClosed (after Close, even if the node was made), or
// ErrNotStarted.
func (n *Node) WaitForInitialCreate(ctx context.Context) error {
	for {
		n.mu.Lock()
		started, closed, created, refusal, changed, finished := n.started, n.closed, n.created, n.refusal, n.changed, n.finished
		n.mu.Unlock()
		switch {
		case closed:
			return errtext.Errorf("node: wait for %s: %w", n.base, ErrClosed)
		case created:
			return nil
		case !started:
			return errtext.Errorf("node: wait for %s: %w", n.base, ErrNotStarted)
		case refusal != nil:
			return refusal // "node: make <path>: ..."
		case finished != nil:
			return finished
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return errtext.Errorf("node: wait for %s: %w", n.base, ctx.Err())
		}
	}
}

// SetData makes data the node's data: it is written to the node now if it
// is present, and every time the node is made again it is made with it.
// SetData waits until the node holds it, or until ctx ends; either way
// data is the node's from then on (unless a later SetData replaces it).
// Before Start it only records data. It fails with ErrClosed after Close,
// with an error wrapping connection.ErrDataTooLarge (and changes nothing)
// for data too large for a request, or with the server's refusal of the
// write.
//
// With WithGuard(g) the write commits only while the hold of g lasts, in
// one transaction with the guard's check, and data becomes the node's
// (what every later re-create writes) only if it committed. SetData then
// waits until the node is present and writes it there: nil means it
// committed. A hold over before the write is sent, or found over by the
// server (its node gone), fails with an error matching
// connection.ErrGuardFailed, nothing written, and the node keeps its data;
// so does a guard of another client's hold (another session). A write
// whose answer was lost fails with connection.ErrOutcomeUnknown: the node
// may hold data (written while the hold lasted) or its former data, and
// the Node keeps its former data for re-creates. When ctx ends before the
// write is sent, nothing is written (ctx's error); after, the error wraps
// connection.ErrOutcomeUnknown too. Before Start it fails with
// ErrNotStarted.
func (n *Node) SetData(ctx context.Context, data []byte, opts ...WriteOption) error {
	if err := n.checkData(data); err != nil {
		return errtext.Errorf("node: set data of %s: %w", n.base, err)
	}
	o, err := writeOpts(opts)
	if err != nil {
		return errtext.Errorf("node: set data of %s: %w", n.base, err)
	}
	if o.Guarded {
		if err := n.setDataGuarded(ctx, data, o.Guard); err != nil {
			return errtext.Errorf("node: set data of %s: %w", n.base, err)
		}
		return nil
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return errtext.Errorf("node: set data of %s: %w", n.base, ErrClosed)
	}
	n.data = slices.Clone(data)
	n.gen++
	g := n.gen
	started := n.started
	n.broadcastLocked()
	n.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case n.wake <- struct{}{}:
	default: // the worker has a wake-up pending already
	}
	for {
		n.mu.Lock()
		wrote, closed, failGen, failErr, changed, finished := n.wrote, n.closed, n.failGen, n.failErr, n.changed, n.finished
		n.mu.Unlock()
		switch {
		case wrote >= g:
			return nil
		case closed:
			return errtext.Errorf("node: set data of %s: %w", n.base, ErrClosed)
		case failGen >= g:
			return errtext.Errorf("node: set data of %s: %w", n.base, failErr)
		case finished != nil:
			return finished
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return errtext.Errorf("node: set data of %s: %w", n.base, ctx.Err())
		}
	}
}

// broadcastLocked wakes every wait; n.mu is held.
func (n *Node) broadcastLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}
