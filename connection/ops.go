package connection

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Mode is the kind of node Create makes.
type Mode int32

// Node modes, ZooKeeper's CreateMode.
const (
	Persistent           Mode = zk.FlagPersistent
	Ephemeral            Mode = zk.FlagEphemeral
	PersistentSequential Mode = zk.FlagSequence
	EphemeralSequential  Mode = zk.FlagEphemeralSequential
	// Container: a persistent node the server deletes some time after
	// its last child is gone. Servers before 3.5.1 lack it; there the
	// client creates a persistent node instead.
	Container Mode = zk.FlagContainer
)

func (m Mode) valid() bool { return m >= Persistent && m <= PersistentSequentialTTL }
func (m Mode) sequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialTTL
}
func (m Mode) ephemeral() bool { return m == Ephemeral || m == EphemeralSequential }

// errUnimplemented is how go-zookeeper reports the server's
// "unimplemented" code, such as a container create on a 3.4 server.
const errUnimplemented = "unknown error: -6"

// scope says in which sessions an operation may run.
type scope int

const (
	// inSession: only in the session of its first attempt. A retry after a
	// lost connection goes to the same session (the same go-zookeeper
	// handle, which never opens another one); once that session has ended
	// the operation fails with ErrSessionLost and is never re-sent. A
	// delete or set on a fixed path re-run in a later session could act on
	// another client's node.
	inSession scope = iota
	// anySession: safe in any session (a read, an idempotent create of
	// persistent nodes); a retry follows the client into its next session.
	anySession
)

type pinKey struct{}

// Pin returns a context under which the client's writes run in s only. A
// write (Create, Set, Delete, Multi...) made with it whose first attempt
// would go to another session fails with an error wrapping ErrSessionLost
// and sends nothing; its retries stay in s, as every write's do. Reads
// ignore the pin. A recipe pins the release of a node that only its
// session may touch (a queue item's taken marker, say): without the pin a
// write begun just after the session changed would run in the next one.
func pinSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, pinKey{}, s)
}

func pinned(ctx context.Context) *Session {
	s, _ := ctx.Value(pinKey{}).(*Session)
	return s
}

// call runs op under the retry policy, waiting for a session when there is
// none. With inSession, every attempt runs on the handle and session of
// the first. Errors are wrapped with what and path.
func (c *Client) call(ctx context.Context, what, path string, sc scope, op func(ctx context.Context, zc *zk.Conn) error) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	var (
		zc      *zk.Conn
		sess    *Session
		unknown bool // an attempt was sent and not answered
		tries   int
	)
	err := retry.DoNotify(ctx, c.opts.policy, func(ctx context.Context) error {
		tries++
		ctx = c.withAttempt(ctx, tries)
		if sess == nil || sc == anySession {
			var err error
			if zc, sess, err = c.current(ctx); err != nil {
				return retry.Permanent(err)
			}
			if p := pinned(ctx); p != nil && sc == inSession && p != sess {
				if err := c.sessionErr(p, nil); err != nil {
					return retry.Permanent(err)
				}
				return retry.Permanent(errtext.Errorf("%w: pinned session %#x is not the current one", ErrSessionLost, p.ID()))
			}
		} else if err := c.sessionErr(sess, nil); err != nil {
			return retry.Permanent(err)
		}
		err := c.ensureNamespace(ctx, zc)
		if err == nil {
			err = op(ctx, zc)
			unknown = unknown || noAnswer(err) || isUnanswered(err)
		}
		if noAnswer(err) && c.takeTooLarge(wire.TooLargeKey(what, c.server(path))) {
			// The answer came and was too long for the client's buffer;
			// asking again would only drop the next connection too.
			return retry.Permanent(errtext.Errorf("%w (%d bytes): %w", ErrResponseTooLarge, c.opts.maxBufferSize, err))
		}
		if sc == anySession && noAnswer(err) && sess.Err() != nil && !errors.Is(sess.Err(), ErrClosed) {
			// Its session ended under it: try again in the next one.
			return retry.Again(err)
		}
		return c.opErr(sess, err)
	}, func(err error, next time.Duration) {
		c.opts.logger.Debug("zookeeper operation retried", "op", what, "path", path, "error", err, "after", next)
	})
	if err != nil && sc == inSession && unknown {
		// A write sent and not answered may have been applied: never
		// report it as not done.
		return errtext.Errorf("connection: %s %s: %w: %w", what, path, ErrOutcomeUnknown, err)
	}
	if err != nil {
		return errtext.Errorf("connection: %s %s: %w", what, path, err)
	}
	return nil
}

// unansweredError is the error of a request whose caller stopped waiting
// for it (its context ended) after it was handed to go-zookeeper: it may
// have been sent, and applied. It unwraps to the context's error.
type unansweredError struct{ err error }

func (e unansweredError) Error() string { return e.err.Error() }
func (e unansweredError) Unwrap() error { return e.err }

func isUnanswered(err error) bool {
	if err == nil {
		return false // the common case, without errors.As's allocation
	}
	var u unansweredError
	return errors.As(err, &u)
}

// noteTooLarge records that the reply to a request (tooLargeKey: its kind
// and server path) exceeded the client's buffer.
func (c *Client) noteTooLarge(key string) { c.tooLarge.Store(key, time.Now()) }

// takeTooLarge reports, once, whether a reply to a request of key
// exceeded the client's buffer just now (the request fails as soon as the
// connection drops; an older note is of a request that gave up). The
// other requests the drop fails, a read of the same node's data among
// them, are retried.
func (c *Client) takeTooLarge(key string) bool {
	if c.opts.maxBufferSize == 0 {
		return false
	}
	at, ok := c.tooLarge.LoadAndDelete(key)
	return ok && time.Since(at.(time.Time)) < 10*time.Second
}

// opErr maps the error of an attempt made in sess: once sess has ended,
// any failure is final and says the session was lost.
func (c *Client) opErr(sess *Session, err error) error {
	if err == nil {
		return nil
	}
	if noAnswer(err) {
		if serr := c.sessionErr(sess, err); serr != nil {
			return retry.Permanent(serr)
		}
	}
	return c.mapErr(err)
}

// noAnswer reports whether err says the server's answer never came (as
// opposed to an answer such as NoNode).
func noAnswer(err error) bool {
	return retry.Retryable(err) || errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionExpired)
}

// sessionErr returns nil while sess lives, and otherwise an error that
// wraps ErrSessionLost (ErrClosed after Close) and cause, if any.
func (c *Client) sessionErr(sess *Session, cause error) error {
	serr := sess.Err()
	if serr == nil {
		return nil
	}
	if errors.Is(serr, ErrClosed) {
		return ErrClosed
	}
	if cause == nil || errors.Is(cause, ErrSessionLost) {
		return serr
	}
	return errtext.Errorf("%w (%w)", serr, cause)
}

// run runs f, returning early with ctx's error when ctx ends first.
// go-zookeeper calls take no context; an abandoned call finishes in the
// background when its answer comes or its handle closes (Close waits).
// f must not write anything its caller reads: results travel with value.
func (c *Client) run(ctx context.Context, f func() error) error {
	_, err := value(c, ctx, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// value is run for a call with a result: the result travels back with the
// error, so an abandoned call never writes to a variable its caller may
// still read.
func value[T any](c *Client, ctx context.Context, f func() (T, error)) (T, error) {
	return valueThen(c, ctx, f, nil)
}

// valueThen is value that, when ctx ends before f returns, calls abandoned
// with f's result once f has returned, in the goroutine that ran f. It is
// how a caller that gives up cleans up after a request whose effect it
// cannot know yet: only after f returned has the request been answered or
// its connection closed.
func valueThen[T any](c *Client, ctx context.Context, f func() (T, error), abandoned func(T, error)) (T, error) {
	var zero T
	if ctx.Done() == nil {
		return f()
	}
	if ctx.Value(inlineKey{}) != nil {
		// A goroutine of the client's own, that nothing waits for but its
		// callback (childrenThen): it waits for the answer itself.
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		return f()
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return zero, ErrClosed
	}
	c.wg.Add(1)
	c.mu.Unlock()
	type result struct {
		v   T
		err error
	}
	var (
		mu   sync.Mutex
		gone bool // the caller left
	)
	done := make(chan result, 1)
	go func() {
		defer c.wg.Done()
		v, err := f()
		mu.Lock()
		if !gone {
			done <- result{v, err} // buffered; sent under mu, so the caller either takes it or has left
			mu.Unlock()
			return
		}
		mu.Unlock()
		if abandoned != nil {
			abandoned(v, err)
		}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		select {
		case r := <-done: // f finished meanwhile: its result counts
			return r.v, r.err
		default:
		}
		gone = true
		return zero, unansweredError{ctx.Err()}
	}
}

// node is what a read of one node returns.
type node struct {
	data     []byte
	children []string
	exists   bool
	stat     *zk.Stat
	ch       <-chan zk.Event
}

// mapErr turns go-zookeeper's errors about the session into the client's.
func (c *Client) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrSessionExpired):
		return errtext.Errorf("%w: %w", ErrSessionLost, err)
	case errors.Is(err, zk.ErrClosing):
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return ErrClosed
		}
		// The handle was replaced after a local expiry.
		return errtext.Errorf("%w: %w", ErrSessionLost, err)
	}
	return err
}

func (c *Client) server(p string) string { return join(c.opts.namespace, p) }
func (c *Client) client(p string) string { return strip(c.opts.namespace, p) }

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
// is unknown (an ephemeral node went with its session in any case).
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
