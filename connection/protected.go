package connection

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
	"github.com/zkrecipes/zkrecipes/retry"
)

// ProtectedPrefix starts the name of every protected node, as in Curator:
// "_c_" + a 36-character UUID + "-" + the caller's name.
const ProtectedPrefix = wire.ProtectedPrefix

// protectedIDLen is the length of "_c_<uuid>-".
const protectedIDLen = len(ProtectedPrefix) + 36 + 1

// IsProtected reports whether a node name has Curator's protected form:
// longer than 40 characters, starting "_c_", with "-" after the UUID.
func IsProtected(name string) bool {
	return len(name) > protectedIDLen && strings.HasPrefix(name, ProtectedPrefix) && name[protectedIDLen-1] == '-'
}

// newUUID returns a random (version 4) UUID in its 36-character text form.
func newUUID() string { return conntypes.NewUUID() }

// Created is a node made by CreateProtected.
type Created struct {
	// Path is the node's path, with its sequence suffix.
	Path string
	// Session is the session the node was made in; for ephemeral modes it
	// is the node's owner.
	Session *Session
	// Czxid is the zxid of the create: the server says it in its reply
	// (create2, ZooKeeper 3.5+); for a node found again after a lost reply
	// it is read.
	Czxid int64
}

// CreateProtected creates a node whose name carries a fresh GUID, as
// Curator's protection mode does: for path "/locks/a/lock-" it creates
// "/locks/a/_c_<uuid>-lock-<seq>". Missing parents are created as
// containers.
//
// The GUID is what makes the create safe to retry: if the connection is
// lost after the request was sent, the retry looks for a child with the
// GUID before creating again, and so finds the node the first attempt
// made. An ephemeral node found that way but owned by another session (an
// earlier session that has since expired) is deleted and created again.
//
// If the create finally fails, or ctx ends while it is in flight, any node
// it may have made is deleted in the background, so that nothing is
// orphaned.
func (c *Client) CreateProtected(ctx context.Context, path string, data []byte, mode Mode) (Created, error) {
	return c.createProtected(ctx, path, data, mode, nil)
}

// createProtectedThen is CreateProtected that calls then, once, as its
// first create request is written on the connection, before the answer —
// from the connection's writer, so then must not block (it sends its
// requests on the wire, or starts a goroutine for them). A request sent
// from then goes out on the same connection behind the create (the
// tracker writes a connection's requests, go-zookeeper's and its own, in
// the order they were made), and ZooKeeper handles one connection's
// requests in order. So a read sent in then, answered on that connection,
// sees the create if it applied — the create and the read cost one round
// trip, not two. Nothing holds if the connection changed in between: the
// caller must check what it reads (a listing that names the new node was
// taken after the create). then is not called when the request was never
// written.
func (c *Client) createProtectedThen(ctx context.Context, path string, data []byte, mode Mode, then func()) (Created, error) {
	return c.createProtected(ctx, path, data, mode, then)
}

func (c *Client) createProtected(ctx context.Context, path string, data []byte, mode Mode, then func()) (Created, error) {
	if err := ValidatePath(path); err != nil {
		return Created{}, err
	}
	if _, err := createOpts(path, mode, nil); err != nil {
		return Created{}, err
	}
	if mode == Container {
		return Created{}, errtext.Errorf("%w: a container cannot be protected", ErrInvalidOption)
	}
	dir, name := parent(path), lastComponent(path)
	id := ProtectedPrefix + newUUID() + "-"
	if err := c.checkSize("create", path, c.requestSize(childPath(dir, id+name+"0000000000"), data, true)); err != nil {
		return Created{}, err
	}
	data = orEmpty(data)
	spath := c.server(childPath(dir, id+name))
	var (
		out       Created
		attempt   int
		handedOff bool // an abandoned create cleans up after itself
	)
	err := retry.DoNotify(ctx, c.opts.policy, func(ctx context.Context) error {
		attempt++
		ctx = c.withAttempt(ctx, attempt)
		zc, sess, err := c.current(ctx)
		if err != nil {
			return retry.Permanent(err)
		}
		if err := c.ensureNamespace(ctx, zc); err != nil {
			return c.mapErr(err)
		}
		if attempt > 1 {
			found, czxid, err := c.findProtected(ctx, zc, sess, c.server(dir), id, mode)
			if err != nil {
				return c.mapErr(err)
			}
			if found != "" {
				out = Created{Path: c.client(found), Session: sess, Czxid: czxid}
				return nil
			}
		}
		var written func() // then, on the first attempt only
		if attempt == 1 {
			written, then = then, nil
		}
		abandoned := func(created string, err error) { c.cleanupAbandoned(zc, created, err, c.server(dir), id) }
		created, st, onWire, err := c.createOnWire(ctx, zc, sess, spath, data, mode, written, abandoned)
		noParent := onWire && errors.Is(err, zk.ErrNoNode)
		if noParent {
			// A parent is missing: go-zookeeper's path below makes it
			// and creates again. The create was written, and written
			// called.
			onWire, written = false, nil
		}
		if !onWire {
			if written != nil {
				if tr := c.trackerOf(zc); tr != nil {
					if forget := tr.WhenWritten(spath, nil, written); forget != nil {
						defer forget()
					}
				}
			}
			created, err = valueThen(c, ctx, func() (string, error) {
				// Not cancellable: it returns when the server answers or
				// the connection closes, and only then is its outcome
				// known. Its requests keep the caller's values (the
				// observer's span, the attempt).
				bg := context.WithoutCancel(ctx)
				if noParent {
					if err := c.createParents(bg, zc, spath, Container); err != nil {
						return "", err
					}
					return c.createRaw(bg, zc, spath, data, mode)
				}
				return c.createWithParents(bg, zc, spath, data, mode, Container)
			}, abandoned)
		}
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			handedOff = true
			return retry.Permanent(err)
		}
		if err != nil {
			return c.mapErr(err)
		}
		out = Created{Path: c.client(created), Session: sess}
		ok := onWire // its reply carried the node's Stat
		if !ok {
			st, ok = c.createdStat(zc, created)
		}
		if !ok {
			// No create2 reply was read (the handle was replaced, or the
			// reply forgotten): one read settles the owner and the czxid.
			stat, err := c.stat(ctx, zc, created)
			if errors.Is(err, zk.ErrNoNode) && mode.ephemeral() {
				err = errtext.Errorf("%w: node %s is gone", ErrSessionLost, out.Path)
			}
			if err != nil {
				return retry.Permanent(c.opErr(sess, err))
			}
			st = wire.Created{Czxid: stat.Czxid, Owner: stat.EphemeralOwner}
		}
		out.Czxid = st.Czxid
		if mode.ephemeral() && st.Owner != sess.ID() {
			// go-zookeeper ran the create in another session than sess
			// (CURATOR-604's double holders).
			_ = c.run(ctx, tracedErr(c, ctx, zc, "delete", created, func() error { return zc.Delete(created, -1) }))
			return retry.Permanent(errtext.Errorf("%w: node %s was created in session %#x, not %#x", ErrSessionLost, out.Path, st.Owner, sess.ID()))
		}
		return nil
	}, func(err error, next time.Duration) {
		c.opts.logger.Debug("connection: protected create retried", "path", path, "error", err, "after", next)
	})
	if err != nil {
		if !handedOff {
			c.deleteProtectedLater(c.server(dir), id)
		}
		return Created{}, errtext.Errorf("connection: create %s: %w", path, err)
	}
	return out, nil
}

// cleanupAbandoned runs once a create whose caller gave up has returned:
// the node it made, or may have made, is deleted. A node made on handle zc
// is deleted there (a handle speaks for one session; if it has ended, an
// ephemeral node went with it); a create whose answer was lost is
// searched for by its GUID, which is safe in any session.
func (c *Client) cleanupAbandoned(zc *zk.Conn, created string, err error, sdir, id string) {
	switch {
	case err == nil:
		c.createdStat(zc, created) // nobody else will collect it
		t := c.sent(c.base, zc, "delete", created, false, 0)
		derr := zc.Delete(created, -1)
		t.answered(derr, 0)
		if derr == nil || errors.Is(derr, zk.ErrNoNode) {
			return
		}
		c.deleteProtectedLater(sdir, id)
	case noAnswer(err):
		c.deleteProtectedLater(sdir, id)
	}
	// Any other error is the server's refusal: nothing was created.
}

// trackerOf returns the tracker of handle zc, nil if zc is no longer the
// client's.
func (c *Client) trackerOf(zc *zk.Conn) *wire.Tracker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zc != zc {
		return nil
	}
	return c.tr
}

// wire.Created returns what the create2 reply said of the node at spath,
// if handle zc is still the client's and it was sent as create2.
func (c *Client) createdStat(zc *zk.Conn, spath string) (wire.Created, bool) {
	c.mu.Lock()
	tr := c.tr
	current := c.zc == zc
	c.mu.Unlock()
	if !current {
		return wire.Created{}, false
	}
	return tr.TakeCreated(spath)
}

// findProtected looks in server directory sdir for the child with the
// protection prefix id. A sync first makes the server catch up with the
// leader, so that a create from an earlier connection of the session is
// either visible or was refused (the session moved).
func (c *Client) findProtected(ctx context.Context, zc *zk.Conn, sess *Session, sdir, id string, mode Mode) (found string, czxid int64, err error) {
	if err := c.run(ctx, tracedErr(c, ctx, zc, "sync", sdir, func() error { _, err := zc.Sync(sdir); return err })); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", 0, err
	}
	children, err := c.children(ctx, zc, sdir)
	if errors.Is(err, zk.ErrNoNode) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	for _, child := range children {
		if !strings.HasPrefix(child, id) {
			continue
		}
		found := childPath(sdir, child)
		stat, err := c.stat(ctx, zc, found)
		if errors.Is(err, zk.ErrNoNode) {
			return "", 0, nil
		}
		if err != nil {
			return "", 0, err
		}
		if !mode.ephemeral() || stat.EphemeralOwner == sess.ID() {
			return found, stat.Czxid, nil
		}
		// Made by an earlier session (CURATOR-498): it dies with that
		// session; delete it now so that it blocks nobody until then.
		if err := c.run(ctx, tracedErr(c, ctx, zc, "delete", found, func() error { return zc.Delete(found, -1) })); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return "", 0, err
		}
		return "", 0, nil
	}
	return "", 0, nil
}

// deleteProtectedLater deletes, in the background, any child of sdir with
// the protection prefix id: the answer to a create may have been lost. It
// runs only after the create returned (answered, or its connection
// closed), and a sync first makes the server catch up with the leader, so
// that the listing sees the node if the create took effect. The GUID is
// this client's alone, so the delete is safe in any session.
func (c *Client) deleteProtectedLater(sdir, id string) {
	c.background(nil, func(ctx context.Context, zc *zk.Conn) error {
		if err := c.run(ctx, tracedErr(c, ctx, zc, "sync", sdir, func() error { _, err := zc.Sync(sdir); return err })); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return c.mapErr(err)
		}
		children, err := c.children(ctx, zc, sdir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return c.mapErr(err)
		}
		for _, child := range children {
			if strings.HasPrefix(child, id) {
				p := childPath(sdir, child)
				if err := c.run(ctx, tracedErr(c, ctx, zc, "delete", p, func() error { return zc.Delete(p, -1) })); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return c.mapErr(err)
				}
				c.opts.logger.Debug("connection: abandoned protected node deleted", "path", c.client(p))
			}
		}
		return nil
	})
}

// guaranteedDelete deletes path in the background, retrying after lost
// connections, as Curator's guaranteed delete does: for a node of session
// sess whose delete failed when its owner gave up on it. It runs in sess
// only: it stops when the node is gone, when sess ends (an ephemeral node
// goes with it, and a later session may have a node of another client at
// the same path), when the client closes, or after twice the session
// timeout.
//
// If czxid is not 0, only the node created by that zxid is deleted: the
// node is read (after a sync) and then deleted at the version read, all
// in sess. For an ephemeral node of sess this is exact: while it exists no
// other client can create the path, so only sess itself could replace it
// in between.
func (c *Client) guaranteedDelete(sess *Session, path string, czxid int64) {
	if sess == nil || ValidatePath(path) != nil {
		return
	}
	sp := c.server(path)
	c.background(sess, func(ctx context.Context, zc *zk.Conn) error {
		if czxid != 0 {
			// At the version read: a write since (a revocation, say)
			// makes the delete fail with BadVersion, and the node is
			// read again.
			return c.deleteIf(ctx, zc, sess, sp, createdAt(czxid), nil)
		}
		err := c.run(ctx, tracedErr(c, ctx, zc, "delete", sp, func() error { return zc.Delete(sp, -1) }))
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return c.opErr(sess, err)
	})
}

// background runs op under the retry policy in a goroutine the client
// owns. With a session, op runs only on that session's handle and stops
// when the session ends, at Close, or after twice the session timeout.
// Without one, op is safe in any session (a protected create's search by
// its GUID): it follows the client from session to session — a session
// lost under it is no reason to stop, the node it looks for may be of the
// next — and gives up only at Close or on an error no retry can mend (the
// server's refusal). Its node, persistent or of a session that lives on,
// would otherwise stay; rounds of the policy follow each other, a pause
// of a third of the session timeout between them, for as long as the
// servers cannot be reached.
func (c *Client) background(sess *Session, op func(ctx context.Context, zc *zk.Conn) error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return // closing the session deletes its ephemeral nodes
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		var err error
		if sess != nil {
			ctx, cancel := c.detached(2 * c.negotiatedTimeout(sess))
			defer cancel()
			err = c.backgroundRound(ctx, sess, op)
		} else {
			err = c.anySessionCleanup(op)
		}
		if err != nil && !errors.Is(err, ErrSessionLost) && !errors.Is(err, ErrClosed) && c.base.Err() == nil {
			// The session lives and the work is not done: a node may be
			// left until the session ends.
			attrs := []any{"error", err}
			if sess != nil {
				attrs = append(attrs, "session", fmt.Sprintf("%#x", sess.ID()))
			}
			c.opts.logger.Warn("connection: background cleanup gave up", attrs...)
		}
	}()
}

// backgroundRound is one run of op under the retry policy, in sess only
// if it is not nil.
func (c *Client) backgroundRound(ctx context.Context, sess *Session, op func(ctx context.Context, zc *zk.Conn) error) error {
	tries := 0
	return retry.Do(ctx, c.opts.policy, func(ctx context.Context) error {
		tries++
		ctx = c.withAttempt(ctx, tries)
		if sess != nil {
			if err := c.sessionErr(sess, nil); err != nil {
				return retry.Permanent(err)
			}
		}
		zc, cur, err := c.current(ctx)
		if err != nil {
			return retry.Permanent(err)
		}
		if sess != nil && cur != sess {
			return retry.Permanent(errtext.Errorf("%w: session %#x is no longer current", ErrSessionLost, sess.ID()))
		}
		err = op(ctx, zc)
		if sess == nil && errors.Is(err, ErrSessionLost) && c.base.Err() == nil {
			return retry.Again(err) // safe in the next session
		}
		return err
	})
}

// anySessionCleanup runs op, safe in any session, in rounds of the retry
// policy until it is done, fails for good, or the client closes.
func (c *Client) anySessionCleanup(op func(ctx context.Context, zc *zk.Conn) error) error {
	for {
		err := c.backgroundRound(c.base, nil, op)
		if err == nil || c.base.Err() != nil || !retry.Retryable(err) {
			return err
		}
		pause := time.NewTimer(c.negotiatedTimeout(nil) / 3)
		select {
		case <-pause.C:
		case <-c.base.Done():
			pause.Stop()
			return ErrClosed
		}
	}
}

// negotiatedTimeout is the timeout the server granted sess (the current
// session's when sess is nil): what bounds a cleanup, rather than the one
// the client asked for.
func (c *Client) negotiatedTimeout(sess *Session) time.Duration {
	if sess != nil {
		return sess.Timeout()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionTimeoutLocked()
}

// stat reads the Stat of server path sp on handle zc.
func (c *Client) stat(ctx context.Context, zc *zk.Conn, sp string) (*zk.Stat, error) {
	return value(c, ctx, traced(c, ctx, zc, "getData", sp, false, func() (*zk.Stat, error) { _, st, err := zc.Get(sp); return st, err }))
}

// children lists server path sp on handle zc.
func (c *Client) children(ctx context.Context, zc *zk.Conn, sp string) ([]string, error) {
	return value(c, ctx, traced(c, ctx, zc, "getChildren2", sp, false, func() ([]string, error) { kids, _, err := zc.Children(sp); return kids, err }))
}

// detached returns a context for cleanup that outlives the caller's: it
// ends after timeout or when the client closes.
func (c *Client) detached(timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.base, timeout)
}
