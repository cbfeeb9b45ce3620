package barrier

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Barrier is a barrier that is up while its node exists: waiters wait for
// the node to go (Curator's DistributedBarrier, Kazoo's Barrier). Its
// methods are safe for concurrent use and start no goroutine.
type Barrier struct {
	client *connection.Client
	path   string
	hooks  *hooks // tests only
}

// New returns the barrier whose node is path. Nothing is sent.
func New(client *connection.Client, path string) (*Barrier, error) {
	if err := check(client, path); err != nil {
		return nil, errtext.Errorf("barrier: %w", err)
	}
	return &Barrier{client: client, path: path}, nil
}

// check refuses a nil client and a path that cannot be a barrier: an
// invalid one, or the root, which can be neither made nor deleted.
func check(client *connection.Client, path string) error {
	if client == nil {
		return errtext.Errorf("%w: nil client", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return err
	}
	if path == "/" {
		return errtext.Errorf("%w: the root cannot be a barrier", connection.ErrInvalidPath)
	}
	return nil
}

// Path returns the barrier's path.
func (b *Barrier) Path() string { return b.path }

// Set raises the barrier: it creates the node (persistent, with the
// client's default data, as Curator does; missing parents as containers).
// A barrier that is up already is left as it is. Set is idempotent: after
// an error — one that wraps connection.ErrOutcomeUnknown says the create
// may have applied — call it again.
func (b *Barrier) Set(ctx context.Context) error {
	_, err := b.client.Create(ctx, b.path, b.client.DefaultData(), connection.Persistent, connection.WithParents())
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return errtext.Errorf("barrier: set %s: %w", b.path, err)
	}
	return nil
}

// Remove lowers the barrier: it deletes the node, whoever made it, and
// every waiter goes on. A barrier that is down already is left so. It
// runs in one session: if that ends first the error wraps
// connection.ErrSessionLost and the delete may or may not have applied;
// Remove is idempotent, call it again.
func (b *Barrier) Remove(ctx context.Context) error {
	err := b.client.Delete(ctx, b.path, -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return errtext.Errorf("barrier: remove %s: %w", b.path, err)
	}
	return nil
}

// IsSet reports whether the barrier is up: whether its node exists.
func (b *Barrier) IsSet(ctx context.Context) (bool, error) {
	ok, _, err := b.client.Exists(ctx, b.path)
	if err != nil {
		return false, errtext.Errorf("barrier: %s: %w", b.path, err)
	}
	return ok, nil
}

// Wait blocks until the barrier is down — its node does not exist — or
// ctx ends (the error then wraps ctx.Err()). It returns at once if the
// barrier is not up.
//
// Every wake-up is checked on the server: a watch that fires for a change
// of the node's data, for a reconnection or for the end of the session is
// not the barrier going down, and Wait reads the node again before it
// returns. Waiting needs no node of its own, so a lost session does not
// end it: Wait goes on in the client's next session.
//
// A Wait that finds the barrier up is told to the client's observer as a
// wait of Recipe "barrier" (no node of its own, nothing ahead), ended as
// Wait returns.
func (b *Barrier) Wait(ctx context.Context) (err error) {
	var obs waitObs
	defer func() { obs.end(err) }()
	for {
		b.hooks.check()
		// A data watch, not an exists watch: on a node that is already
		// gone it sets nothing, where an exists watch would stay on the
		// server until the node is made again.
		_, _, w, err := b.client.GetWatch(ctx, b.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case err != nil:
			return errtext.Errorf("barrier: wait %s: %w", b.path, err)
		}
		if !obs.begun {
			ctx = obs.begin(ctx, b.client, connection.Wait{Recipe: "barrier", Path: b.path})
		}
		select {
		case <-w.Done():
			// Deleted, changed, or the watch's session ended: read again.
		case <-b.hooks.wakeUp():
		case <-ctx.Done():
			return errtext.Errorf("barrier: wait %s: %w", b.path, ctx.Err())
		}
	}
}
