package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/nodeopt"
	"github.com/zkrecipes/zkrecipes/internal/writeguard"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// Registration is an instance registered by this process, kept
// registered until Close: a node.Node at <base>/<service>/<id> holding the
// instance's JSON, made again after the session expired or someone deleted
// it, with the newest data given to Update. Its methods are safe for
// concurrent use.
type Registration struct {
	d    *Discovery
	node *node.Node
	path string // the instance path (a sequential node's base)

	updating sync.Mutex // held by Update

	mu     sync.Mutex
	inst   Instance
	closed bool
}

// Register registers instance i and keeps it registered until the
// Registration is closed, as Curator's registerService does and with its
// node modes: Dynamic (the default) in an ephemeral node, made again in
// each new session after an expiry; DynamicSequential in an
// ephemeral-sequential node, whose name is
// "_c_<uuid>-<id><sequence>"; Static and Permanent in a persistent node,
// which stays when the process ends without Close. A missing ID is made a
// random UUID, a zero Registration the current time (in milliseconds, as
// Curator keeps it); Instance returns what was registered.
//
// A Registration keeps only the node it made (node.Node's rule): a node
// already at the instance's path is not taken over. Register returns once
// the node is made, or fails with ctx's error: it waits while the path
// holds a node that is not its own (the error then also matches
// node.ErrOccupied) — another session's, such as a previous run of this
// instance whose session the server has not expired yet, which goes by
// itself; or, for a Static or Permanent instance, a persistent node
// someone made before (a previous run's registration of the ID), which
// stays until someone deletes it, unless WithAdoptExisting takes it. It
// fails at once with the server's refusal (no permission), with
// ErrInvalidInstance for an instance that cannot be registered, with
// connection.ErrInvalidOption for a bad option, and with node.ErrInUse
// when a Registration of the same client already holds that service and
// ID (update it instead). On failure nothing is left registered, and a
// node that was there is left as it was.
func (d *Discovery) Register(ctx context.Context, i Instance, opts ...RegisterOption) (*Registration, error) {
	if i.ID == "" {
		i.ID = connx.NewUUID()
	}
	if i.Registration.IsZero() {
		i.Registration = time.Now().Truncate(time.Millisecond).UTC()
	}
	if i.ServiceType == "" {
		i.ServiceType = Dynamic
	}
	if err := i.Validate(); err != nil {
		return nil, errtext.Errorf("discovery: register %s/%s: %w", i.Name, i.ID, err)
	}
	var o registerOptions
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("discovery: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	nopts := []node.Option{node.WithMode(modeOf(i.ServiceType)), nodeopt.Recipe("discovery").(node.Option)}
	if o.adopt {
		if i.ServiceType.Ephemeral() {
			return nil, errtext.Errorf("discovery: register %s/%s: %w: WithAdoptExisting is for Static and Permanent instances, not %s", i.Name, i.ID, connection.ErrInvalidOption, i.ServiceType)
		}
		nopts = append(nopts, node.WithAdoptExisting())
	}
	data, err := json.Marshal(i)
	if err != nil {
		return nil, errtext.Errorf("discovery: register %s/%s: %w", i.Name, i.ID, err)
	}
	p := d.InstancePath(i.Name, i.ID)
	n, err := node.New(d.client, p, data, nopts...)
	if err != nil {
		return nil, errtext.Errorf("discovery: register %s: %w", p, err)
	}
	if err := n.Start(); err != nil {
		_ = n.Close(ctx) // never started: nothing to delete
		return nil, errtext.Errorf("discovery: register %s: %w", p, err)
	}
	if err := n.WaitForInitialCreate(ctx); err != nil {
		why := n.Err()
		d.closeNode(ctx, n)
		if why != nil && !errors.Is(err, why) && ctx.Err() != nil {
			return nil, errtext.Errorf("discovery: register %s: %w (%w)", p, err, why)
		}
		return nil, errtext.Errorf("discovery: register %s: %w", p, err)
	}
	return &Registration{d: d, node: n, path: p, inst: i}, nil
}

// WriteOption configures one Update of a Registration.
type WriteOption func(*writeOptions) error

type writeOptions struct {
	writeguard.Write
}

// WithGuard makes an Update commit only while the hold of g lasts (a
// leader's term, a lock: connection.Guard), in one transaction with the
// guard's check. See Registration.Update. A nil g is the guard of no
// hold: the Update is refused with connection.ErrGuardFailed.
func WithGuard(g *connection.Guard) WriteOption {
	return func(o *writeOptions) error {
		o.Use(g)
		return nil
	}
}

// RegisterOption configures a Register.
type RegisterOption func(*registerOptions) error

type registerOptions struct {
	adopt bool
}

// WithAdoptExisting makes Register take the node of a Static or Permanent
// instance that is already at its path — a previous run's registration of
// the same ID, or anyone's — for its own (node.WithAdoptExisting): the
// node gets the instance, and Close deletes it, as Curator's
// registerService takes it (it deletes that node and makes its own). A
// node someone makes at the path after deleting the registration's is
// taken too. Without it such a node is left as it is. For Dynamic and
// DynamicSequential instances, whose nodes belong to their sessions,
// Register fails with connection.ErrInvalidOption.
func WithAdoptExisting() RegisterOption {
	return func(o *registerOptions) error {
		o.adopt = true
		return nil
	}
}

// closeNode closes a node that failed to register, within the session
// timeout: a create in flight is never abandoned, and the node deletes
// what it made in the background if that is not enough.
func (d *Discovery) closeNode(ctx context.Context, n *node.Node) {
	timeout := 10 * time.Second
	if s := d.client.Session(); s != nil {
		timeout = s.Timeout()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	_ = n.Close(cctx)
}

// modeOf is the node mode of a service type, as Curator makes it.
func modeOf(t ServiceType) connection.Mode {
	switch t {
	case DynamicSequential:
		return connection.EphemeralSequential
	case Static, Permanent:
		return connection.Persistent
	}
	return connection.Ephemeral
}

// Instance returns the instance as registered, with the newest Update.
func (r *Registration) Instance() Instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inst
}

// Path returns the instance's node: <base>/<service>/<id>, or for a
// DynamicSequential instance the name the server gave it.
func (r *Registration) Path() string { return r.node.Path() }

// Update replaces the registered instance's fields with i's (Curator's
// updateService): the node holds them from then on, and every re-create
// uses them. i must have the registered name, ID and service type
// (ErrNotYours otherwise); a zero Registration keeps the registered one.
// Update waits until the node holds the new data, or ctx ends: the data is
// kept either way and written when it can be. It fails with ErrClosed
// after Close, ErrInvalidInstance for an instance that cannot be
// registered, and the server's refusal to write.
//
// With WithGuard(g) the write commits only while the hold of g lasts (a
// leader's term, a lock), in one transaction with the guard's check
// (node.Node.SetData with node.WithGuard): Update waits until the
// instance is registered and writes it there, and the instance becomes
// the registered one — what Instance returns and every re-create writes —
// only if the write committed. A hold over, or found over by the server,
// and the guard of another client's hold fail with an error matching
// connection.ErrGuardFailed, and the registration keeps its instance; so
// does a write whose answer was lost (connection.ErrOutcomeUnknown: the
// node may hold either) and one given up (ctx) before it was sent.
func (r *Registration) Update(ctx context.Context, i Instance, opts ...WriteOption) error {
	r.updating.Lock() // one Update at a time: inst follows the node's data
	defer r.updating.Unlock()
	r.mu.Lock()
	old, closed := r.inst, r.closed
	r.mu.Unlock()
	if closed {
		return errtext.Errorf("discovery: update %s: %w", r.path, ErrClosed)
	}
	if i.ServiceType == "" {
		i.ServiceType = Dynamic
	}
	if i.Name != old.Name || i.ID != old.ID || i.ServiceType != old.ServiceType {
		return errtext.Errorf("discovery: update %s: %w: %s/%s (%s), registered %s/%s (%s)",
			r.path, ErrNotYours, i.Name, i.ID, i.ServiceType, old.Name, old.ID, old.ServiceType)
	}
	if i.Registration.IsZero() {
		i.Registration = old.Registration
	}
	if err := i.Validate(); err != nil {
		return errtext.Errorf("discovery: update %s: %w", r.path, err)
	}
	data, err := json.Marshal(i)
	if err != nil {
		return errtext.Errorf("discovery: update %s: %w", r.path, err)
	}
	var o writeOptions
	if err := writeguard.Apply(&o, opts); err != nil {
		return errtext.Errorf("discovery: update %s: %w", r.path, err)
	}
	if o.Guarded {
		err := r.node.SetData(ctx, data, node.WithGuard(o.Guard))
		if errors.Is(err, node.ErrClosed) {
			return errtext.Errorf("discovery: update %s: %w", r.path, ErrClosed)
		}
		if err != nil {
			return errtext.Errorf("discovery: update %s: %w", r.path, err)
		}
		r.mu.Lock()
		r.inst = i
		r.mu.Unlock()
		return nil
	}
	err = r.node.SetData(ctx, data)
	switch {
	case errors.Is(err, node.ErrClosed):
		return errtext.Errorf("discovery: update %s: %w", r.path, ErrClosed)
	case errors.Is(err, connection.ErrDataTooLarge):
		return errtext.Errorf("discovery: update %s: %w", r.path, err) // nothing changed
	}
	// The node's data from now on, whether written yet or not.
	r.mu.Lock()
	r.inst = i
	r.mu.Unlock()
	if err != nil {
		return errtext.Errorf("discovery: update %s: %w", r.path, err)
	}
	return nil
}

// Untrusted returns a channel that is closed when the instance's current
// presence ends: its node was deleted, its session lost, the connection
// suspended (under connection.StandardPolicy), or the Registration closed.
// While the instance is not registered it returns a closed channel; Trust
// waits for the next presence. The registration itself goes on: the node
// is made again as soon as it can be, and each presence has a channel of
// its own.
func (r *Registration) Untrusted() <-chan struct{} { return r.node.Untrusted() }

// Err returns why the instance is not registered at the moment, or nil
// while it is (see node.Node.Err).
func (r *Registration) Err() error {
	if r.isClosed() {
		return errtext.Errorf("discovery: %s: %w", r.path, ErrClosed)
	}
	return r.node.Err()
}

// Trust waits until the instance is registered in the client's current
// session and returns that presence's Untrusted channel. It fails with ctx's
// error or ErrClosed.
func (r *Registration) Trust(ctx context.Context) (<-chan struct{}, error) {
	if r.isClosed() {
		return nil, errtext.Errorf("discovery: trust %s: %w", r.path, ErrClosed)
	}
	done, err := r.node.Trust(ctx)
	if errors.Is(err, node.ErrClosed) {
		return nil, errtext.Errorf("discovery: trust %s: %w", r.path, ErrClosed)
	}
	return done, err
}

func (r *Registration) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Close unregisters the instance (Curator's unregisterService): the
// presence ends first, then the node this Registration made is deleted —
// that node only (node.Node.Close), for Static and Permanent instances
// too, as Curator deletes them: a node at the path that someone else made
// is left, unless Register took it with WithAdoptExisting. If ctx ends
// first, Close returns its error and the node is deleted in the background
// (or goes with its session). Close is idempotent.
func (r *Registration) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	if err := r.node.Close(ctx); err != nil {
		return errtext.Errorf("discovery: unregister %s: %w", r.path, err)
	}
	return nil
}
