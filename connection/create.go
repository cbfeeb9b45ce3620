package connection

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Creating nodes: the namespace's root, missing parents, the modes and
// options of Create, and EnsurePath.

// ensureNamespace creates the namespace node (a container) once.
func (c *Client) ensureNamespace(ctx context.Context, zc *zk.Conn) error {
	if c.opts.namespace == "" || c.nsReady.Load() {
		return nil
	}
	if err := c.createParents(ctx, zc, c.opts.namespace+"/x", Container); err != nil {
		return err
	}
	c.nsReady.Store(true)
	return nil
}

// createRaw is one create request, a container falling back to persistent
// where the server lacks containers.
func (c *Client) createRaw(ctx context.Context, zc *zk.Conn, spath string, data []byte, mode Mode) (string, error) {
	acl := aclFor(c.opts.acl, c.client(spath))
	data = orEmpty(data)
	return value(c, ctx, func() (string, error) {
		if mode == Container {
			t := c.sent(ctx, zc, "createContainer", spath, false, 0)
			created, err := zc.CreateContainer(spath, data, zk.FlagContainer, acl)
			t.answered(err, 0)
			if err == nil || err.Error() != errUnimplemented {
				return created, err
			}
			mode = Persistent
		}
		t := c.sent(ctx, zc, "create", spath, false, 0)
		created, err := zc.Create(spath, data, int32(mode), acl)
		t.answered(err, 0)
		return created, err
	})
}

// createParents creates the missing ancestors of server path spath with
// mode (Container or Persistent), from the nearest one up as far as needed.
func (c *Client) createParents(ctx context.Context, zc *zk.Conn, spath string, mode Mode) error {
	p := parent(spath)
	if p == "/" {
		return nil
	}
	_, err := c.createRaw(ctx, zc, p, nil, mode)
	if errors.Is(err, zk.ErrNoNode) {
		if err := c.createParents(ctx, zc, p, mode); err != nil {
			return err
		}
		_, err = c.createRaw(ctx, zc, p, nil, mode)
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// createWithParents creates spath, and on NoNode its missing parents with
// parentMode, then spath again.
func (c *Client) createWithParents(ctx context.Context, zc *zk.Conn, spath string, data []byte, mode, parentMode Mode) (string, error) {
	created, err := c.createRaw(ctx, zc, spath, data, mode)
	if errors.Is(err, zk.ErrNoNode) {
		if err := c.createParents(ctx, zc, spath, parentMode); err != nil {
			return "", err
		}
		created, err = c.createRaw(ctx, zc, spath, data, mode)
	}
	return created, err
}

// CreateOption changes what Create makes: WithParents, WithTTL.
type CreateOption func(*createOptions) error

type createOptions struct {
	parents bool
	ttl     time.Duration
}

// WithParents makes Create first make the missing parents of path, as
// containers (persistent where the server lacks containers), as Curator's
// creatingParentContainersIfNeeded does.
func WithParents() CreateOption {
	return func(o *createOptions) error { o.parents = true; return nil }
}

// WithTTL gives a node of a TTL mode (PersistentTTL,
// PersistentSequentialTTL) its TTL: the server deletes it once it has had
// no child and no change for ttl, a whole number of milliseconds from 1 ms
// to MaxTTL. A TTL mode needs it; any other mode refuses it.
func WithTTL(ttl time.Duration) CreateOption {
	return func(o *createOptions) error {
		if ttl < time.Millisecond || ttl > MaxTTL || ttl%time.Millisecond != 0 {
			return errtext.Errorf("%w: TTL %v: want whole milliseconds from 1ms to 2^40-1ms (MaxTTL)", ErrInvalidOption, ttl)
		}
		o.ttl = ttl
		return nil
	}
}

// createOpts checks a create's mode and options together.
func createOpts(path string, mode Mode, opts []CreateOption) (createOptions, error) {
	var o createOptions
	if !mode.valid() {
		return o, errtext.Errorf("%w: create mode %d", ErrInvalidOption, int32(mode))
	}
	for _, opt := range opts {
		if opt == nil {
			return o, errtext.Errorf("%w: nil create option", ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return o, errtext.Errorf("create %s: %w", path, err)
		}
	}
	switch {
	case mode.ttl() && o.ttl == 0:
		return o, errtext.Errorf("%w: create %s: mode %s needs a TTL: use WithTTL", ErrInvalidOption, path, mode)
	case !mode.ttl() && o.ttl != 0:
		return o, errtext.Errorf("%w: create %s: WithTTL needs a TTL mode, not %s", ErrInvalidOption, path, mode)
	}
	return o, nil
}

// Create creates a node at path and returns its path (with the sequence
// suffix for sequential modes). The parent must exist, unless WithParents
// is given; a TTL mode needs WithTTL, and a server without TTL nodes
// refuses it with an error matching ErrTTLUnsupported. The ACL comes from
// the client's ACL provider.
//
// Like every write, it runs in one session only: a retry after a lost
// connection stays in the session of the first attempt, and if that
// session ends the error wraps ErrSessionLost.
//
// A sequential create is not retried after a lost connection: the first
// attempt may have succeeded, and a retry would leave an orphan; use
// CreateProtected for sequential nodes that must survive connection loss.
// One the server refuses because the name exists fails with an error that
// matches both zk.ErrNodeExists and ErrSequenceExhausted: the directory's
// counter repeated a number.
func (c *Client) Create(ctx context.Context, path string, data []byte, mode Mode, opts ...CreateOption) (string, error) {
	o, err := createOpts(path, mode, opts)
	if err != nil {
		return "", err
	}
	return c.createNode(ctx, "create", path, data, mode, o.ttl, o.parents)
}

// createNode is Create once the mode and options are checked; ttl is 0
// for the modes without one.
func (c *Client) createNode(ctx context.Context, what, path string, data []byte, mode Mode, ttl time.Duration, parents bool) (string, error) {
	size := c.requestSize(path, data, true)
	if ttl > 0 {
		size += 8 // the TTL field
	}
	if err := c.checkSize(what, path, size); err != nil {
		return "", err
	}
	var created string
	err := c.call(ctx, what, path, inSession, func(ctx context.Context, zc *zk.Conn) error {
		sp := c.server(path)
		raw := func() (string, error) {
			if ttl > 0 {
				return c.createTTLRaw(ctx, zc, sp, data, mode, ttl)
			}
			return c.createRaw(ctx, zc, sp, data, mode)
		}
		var err error
		created, err = raw()
		if parents && errors.Is(err, zk.ErrNoNode) {
			if err = c.createParents(ctx, zc, sp, Container); err == nil {
				created, err = raw()
			}
		}
		if err == nil && strings.HasPrefix(lastComponent(created), ProtectedPrefix) {
			// The tracker sent it as a create2 (a protected name) and kept
			// the reply's Stat for CreateProtected: nobody here collects it.
			c.createdStat(zc, created)
		}
		if err != nil && mode.sequential() {
			return retry.Permanent(sequentialErr(err))
		}
		return err
	})
	return c.client(created), err
}

// EnsurePath creates path and its missing ancestors as persistent nodes,
// like Curator's EnsurePath; existing nodes are left as they are. It is
// safe in any session, so a retry may follow the client into a new one.
func (c *Client) EnsurePath(ctx context.Context, path string) error {
	return c.call(ctx, "ensure path", path, anySession, func(ctx context.Context, zc *zk.Conn) error {
		if path == "/" {
			return nil
		}
		_, err := c.createWithParents(ctx, zc, c.server(path), nil, Persistent, Persistent)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
}
