package connection

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/retry"
)

// node is what a read of one node returns.
type node struct {
	data     []byte
	children []string
	exists   bool
	stat     *zk.Stat
	ch       <-chan zk.Event
}

func (c *Client) server(p string) string { return join(c.opts.namespace, p) }

func (c *Client) client(p string) string { return strip(c.opts.namespace, p) }

// Get returns the data and Stat of the node at path. Reads are safe in any
// session: a retry may follow the client into a new one.
func (c *Client) Get(ctx context.Context, path string) (data []byte, stat *zk.Stat, err error) {
	err = c.call(ctx, "get", path, anySession, func(ctx context.Context, zc *zk.Conn) error {
		sp := c.server(path)
		n, err := value(c, ctx, traced(c, ctx, zc, "getData", sp, false, func() (n node, err error) { n.data, n.stat, err = zc.Get(sp); return }))
		data, stat = n.data, n.stat
		return err
	})
	return data, stat, err
}

// Children returns the names of the children of path, unsorted.
func (c *Client) Children(ctx context.Context, path string) (children []string, stat *zk.Stat, err error) {
	err = c.call(ctx, "children", path, anySession, func(ctx context.Context, zc *zk.Conn) error {
		sp := c.server(path)
		n, err := value(c, ctx, traced(c, ctx, zc, "getChildren2", sp, false, func() (n node, err error) { n.children, n.stat, err = zc.Children(sp); return }))
		children, stat = n.children, n.stat
		return err
	})
	return children, stat, err
}

// childrenThen lists path's children off the caller's goroutine and calls
// then, once, with the result; then must not block. A listing sent beside
// another request (createProtectedThen) uses it, and a burst of such
// requests must not be a burst of goroutines (the runtime keeps a
// goroutine's descriptor for good once made). While the client has a
// session the listing is one request on the wire (childrenOnWire): no
// goroutine, no retry, then called from the connection's goroutines with
// its answer or the failure of its connection. Otherwise it is Children
// on a goroutine of the client, whose go-zookeeper request runs on that
// goroutine itself, so that when ctx ends then is called once the request
// was answered or its connection lost, with its result, or, between
// retries, with ctx's error. Close waits for it.
func (c *Client) childrenThen(ctx context.Context, path string, then func(children []string, stat *zk.Stat, err error)) {
	if c.childrenOnWire(ctx, path, then) {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		then(nil, nil, errtext.Errorf("connection: children %s: %w", path, ErrClosed))
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		then(c.Children(context.WithValue(ctx, inlineKey{}, true), path))
	}()
}

// inlineKey marks the context of a request whose go-zookeeper call runs
// on the caller's goroutine even if the context can end (valueThen).
type inlineKey struct{}

// Exists reports whether the node at path exists, with its Stat.
func (c *Client) Exists(ctx context.Context, path string) (ok bool, stat *zk.Stat, err error) {
	err = c.call(ctx, "exists", path, anySession, func(ctx context.Context, zc *zk.Conn) error {
		sp := c.server(path)
		n, err := value(c, ctx, traced(c, ctx, zc, "exists", sp, false, func() (n node, err error) {
			n.exists, n.stat, err = zc.Exists(sp)
			return
		}))
		// go-zookeeper can return (true, stat, ErrNoServer): look at err
		// first.
		if err == nil {
			ok, stat = n.exists, n.stat
		}
		return err
	})
	return ok, stat, err
}

// Set writes data to the node at path if its version matches (-1 for
// any) and returns the new Stat. It runs in one session only (see Create).
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (stat *zk.Stat, err error) {
	if err := c.checkSize("set", path, c.requestSize(path, data, false)); err != nil {
		return nil, err
	}
	data = orEmpty(data)
	err = c.call(ctx, "set", path, inSession, func(ctx context.Context, zc *zk.Conn) error {
		var err error
		sp := c.server(path)
		stat, err = value(c, ctx, traced(c, ctx, zc, "setData", sp, false, func() (*zk.Stat, error) { return zc.Set(sp, data, version) }))
		return err
	})
	return stat, err
}

// Delete deletes the node at path if its version matches (-1 for any).
// After a lost connection it is retried in the same session, and a retry
// that finds the node gone reports zk.ErrNoNode: the first attempt may have
// deleted it. It is never re-sent in another session: if the session ends
// first, the error wraps ErrSessionLost, and whether the node was deleted
// is unknown (an ephemeral node went with its session in any case). A
// retry deletes whatever node is at the path then, at that version: where
// others may make a node at the path after the first attempt applied, use
// DeleteCreated, which deletes only the node created at a given czxid.
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	return c.call(ctx, "delete", path, inSession, func(ctx context.Context, zc *zk.Conn) error {
		sp := c.server(path)
		return c.run(ctx, tracedErr(c, ctx, zc, "delete", sp, func() error { return zc.Delete(sp, version) }))
	})
}

// Sync makes the server the client is connected to catch up with the
// leader on path, so that a read after it sees every write committed
// before it.
func (c *Client) Sync(ctx context.Context, path string) error {
	return c.call(ctx, "sync", path, anySession, func(ctx context.Context, zc *zk.Conn) error {
		sp := c.server(path)
		return c.run(ctx, tracedErr(c, ctx, zc, "sync", sp, func() error { _, err := zc.Sync(sp); return err }))
	})
}

// Multi runs ops as one transaction: all succeed or none does. Each op is
// a *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest or
// *zk.CheckVersionRequest with a client path; a create without an ACL gets
// the provider's. The requests are not changed. A transaction whose answer
// was lost with the connection is not retried, since it may have been
// applied.
//
// An op may also be a *Guard, a hold's (mutex.Mutex.Guard,
// election.Term.Guard...): the transaction then commits only while that
// hold lasts, and runs in the hold's session only. When the hold is over —
// released, lost, its node gone — Multi sends nothing, or the server
// applies nothing, and the error matches ErrGuardFailed; the failure of
// another op is reported as it is. See Guard. The responses are in the
// order of ops, a guard's included.
func (c *Client) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	gs, ops := splitGuards(ops)
	var sess *Session
	if len(gs.guards) > 0 {
		var err error
		if sess, err = gs.check(ctx, pinned(ctx)); err != nil {
			return nil, err
		}
		ctx = pinSession(ctx, sess)
	}
	server := make([]any, len(ops))
	size := 16 // the multi's header and its end marker
	for _, g := range gs.guards {
		size += c.requestSize(g.path, nil, false)
	}
	for i, op := range ops {
		var p string
		switch o := op.(type) {
		case *zk.CreateRequest:
			cp := *o
			if len(cp.Acl) == 0 {
				cp.Acl = aclFor(c.opts.acl, o.Path)
			}
			cp.Data = orEmpty(cp.Data)
			size += c.requestSize(o.Path, cp.Data, true)
			p, cp.Path, server[i] = o.Path, c.server(o.Path), &cp
		case *zk.DeleteRequest:
			cp := *o
			size += c.requestSize(o.Path, nil, false)
			p, cp.Path, server[i] = o.Path, c.server(o.Path), &cp
		case *zk.SetDataRequest:
			cp := *o
			cp.Data = orEmpty(cp.Data)
			size += c.requestSize(o.Path, cp.Data, false)
			p, cp.Path, server[i] = o.Path, c.server(o.Path), &cp
		case *zk.CheckVersionRequest:
			cp := *o
			size += c.requestSize(o.Path, nil, false)
			p, cp.Path, server[i] = o.Path, c.server(o.Path), &cp
		default:
			return nil, errtext.Errorf("%w: multi op %d has type %T", ErrInvalidOption, opIndex(gs, i), op)
		}
		if err := ValidatePath(p); err != nil {
			return nil, errtext.Errorf("multi op %d: %w", opIndex(gs, i), err)
		}
	}
	if err := c.checkSize("multi", "/", size); err != nil {
		return nil, err
	}
	if len(gs.guards) > 0 {
		// The guards' checks go first: the tracker reads them there, and
		// the server, which stops at the first failing op, says first
		// whether the hold was still on.
		server = append(gs.register(c, sess), server...)
		defer gs.unregister(c)
	}
	var res []zk.MultiResponse
	err := c.call(ctx, "multi", "/", inSession, func(ctx context.Context, zc *zk.Conn) error {
		var err error
		res, err = value(c, ctx, traced(c, ctx, zc, "multi", "", false, func() ([]zk.MultiResponse, error) { return zc.Multi(server...) }))
		// Not retried: the transaction may have been applied.
		return retry.Permanent(err)
	})
	for i := range res {
		res[i].String = c.client(res[i].String)
	}
	if len(gs.guards) == 0 {
		return res, err
	}
	if err != nil && !errors.Is(err, ErrOutcomeUnknown) {
		// Answered, or never sent: nothing was applied.
		if ferr := gs.failure(res); ferr != nil {
			err = ferr
		} else if errors.Is(err, ErrSessionLost) {
			err = guardFailed(gs.guards[0], err)
		}
	}
	return gs.order(res), err
}

// opIndex is the place among the caller's ops of the i-th op that is not
// a guard.
func opIndex(gs guarded, i int) int {
	for _, at := range gs.at {
		if at <= i {
			i++
		}
	}
	return i
}

// lastComponent returns the name of the node at a valid path.
func lastComponent(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }
