package connection

import (
	"bytes"
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Nodes at fixed paths, and who owns them.
//
// A node's ephemeralOwner names a session, and a Go program runs many
// participants on one client (one client per process is the normal
// shape): the owner check proves that a node belongs to this client, not
// to this participant. A participant that creates a node at a fixed path
// — a naive lock, a queue item's taken marker — therefore writes its own
// identity into the node's data, and takes a node it finds there for its
// own only when both the session and the data are its own (as Kazoo's
// LockingQueue puts its id into a taken node).
//
// And a path that others can re-create is never deleted blind after a
// lost answer: the first delete may have applied, another client may have
// made a node of its own there since, and a retry would delete that one.
// DeleteCreated proves that the node is still the one it made before it
// sends the delete again.

// claim creates an ephemeral node at path for one participant, whose
// identity is data: it must be unique to this claim (carry a fresh
// NewUUID, say). It returns the node, with its owner session and czxid,
// and a watch on it, which fires when the node changes or is deleted. The
// parent must exist.
//
// When path holds another node — another session's, or another
// participant's of this session — the error matches zk.ErrNodeExists and
// the watch, if not nil, is on that node: it fires when it goes. After a
// lost answer, a retry in the same session takes the node it finds for its
// own only if its owner is this session and its data are data. If the
// create's outcome stays unknown (ctx ended while it was in flight, or no
// retry settled it), the error wraps ErrOutcomeUnknown and a node it may
// have made is deleted in the background by the same test, so that nothing
// is orphaned.
func (c *Client) claim(ctx context.Context, path string, data []byte) (Created, *Watch, error) {
	return c.claimThen(ctx, path, data, claimHooks{})
}

// claimHooks tell the caller of claimThen how far its claim went
// (internal/conntypes).
type claimHooks = conntypes.ClaimHooks

// claimThen is Claim, telling hooks of the claim's progress: a caller that
// only waited for its turn to claim (a work queue's line of idle workers)
// may let the next one go as its create is written, and do more the
// moment it is answered.
func (c *Client) claimThen(ctx context.Context, path string, data []byte, hooks claimHooks) (Created, *Watch, error) {
	if err := ValidatePath(path); err != nil {
		return Created{}, nil, err
	}
	if len(data) == 0 {
		return Created{}, nil, errtext.Errorf("%w: a claim of %s needs data that identify it", ErrInvalidOption, path)
	}
	sess := pinned(ctx)
	if sess == nil {
		var err error
		if sess, err = c.WaitSession(ctx); err != nil {
			return Created{}, nil, err
		}
		ctx = pinSession(ctx, sess)
	}
	if hooks.Written != nil {
		if zc, s, err := c.current(ctx); err == nil && s == sess {
			if tr := c.trackerOf(zc); tr != nil {
				if forget := tr.WhenWritten(c.server(path), data, hooks.Written); forget != nil {
					defer forget()
				}
			}
		}
	}
	_, err := c.Create(ctx, path, data, Ephemeral)
	if err == nil && hooks.Made != nil {
		hooks.Made()
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		if errors.Is(err, ErrOutcomeUnknown) {
			c.deleteClaimLater(sess, path, data)
		}
		return Created{}, nil, err
	}
	// Created, or a node is there: whose is it? The read goes after the
	// create on the session's connection, so it sees the create if it
	// applied.
	got, stat, w, rerr := c.GetWatch(ctx, path)
	switch {
	case errors.Is(rerr, zk.ErrNoNode) && err == nil:
		// Ours, and deleted already by someone else, or gone with the
		// session.
		if serr := c.sessionErr(sess, nil); serr != nil {
			return Created{}, nil, errtext.Errorf("connection: claim %s: %w", path, serr)
		}
		return Created{}, nil, errtext.Errorf("connection: claim %s: %w (deleted right after its create)", path, zk.ErrNoNode)
	case errors.Is(rerr, zk.ErrNoNode):
		// The other node went in between: the caller may try again.
		return Created{}, nil, err
	case rerr != nil:
		if err == nil || errors.Is(err, ErrOutcomeUnknown) {
			c.deleteClaimLater(sess, path, data)
		}
		return Created{}, nil, rerr
	}
	if stat.EphemeralOwner == sess.ID() && bytes.Equal(got, data) && c.live(sess) {
		return Created{Path: path, Session: sess, Czxid: stat.Czxid}, w, nil
	}
	if err == nil {
		// Our create was answered, yet the node is not ours: ours was
		// deleted and another made since. Nothing of ours is left.
		err = errtext.Errorf("connection: claim %s: %w (ours was replaced)", path, zk.ErrNodeExists)
	}
	return Created{}, w, err
}

// deleteClaimLater deletes, in the background and in sess only, the node
// at path if it is a claim of sess with data: the answer to its create was
// lost.
func (c *Client) deleteClaimLater(sess *Session, path string, data []byte) {
	sp := c.server(path)
	c.background(sess, func(ctx context.Context, zc *zk.Conn) error {
		return c.deleteIf(ctx, zc, sess, sp, func(got []byte, stat *zk.Stat) bool {
			return stat.EphemeralOwner == sess.ID() && bytes.Equal(got, data)
		}, nil)
	})
}

// DeleteCreated deletes the node at path that was created at czxid (its
// Stat's Czxid: the fencing token a recipe hands out), in one session only
// (the pinned one, else the current), and no other node.
//
// The node is read before it is deleted, and deleted at the version read
// only if it is the one created at czxid: a node at the path may be
// another's — ours deleted by someone outside the recipe, and another
// session's made since at the same path — and a delete without that read
// would take it. The read follows a sync, sent ahead of it in the same
// round trip, so that a server behind the leader does not show ours still
// there. What the read cannot rule out is a node deleted and made again,
// at the same version, between the read and the delete: both by others,
// within one round trip. After a lost answer the delete is never sent
// again blind: it is read again the same way.
//
// It returns nil once that node is gone — deleted here, by an attempt
// whose answer was lost, or by anyone since — and an error matching
// zk.ErrNoNode when the first attempt found no node created at czxid.
func (c *Client) DeleteCreated(ctx context.Context, path string, czxid int64) error {
	return c.deleteCreated(ctx, path, czxid, false)
}

// deleteUnique is DeleteCreated for a node whose name nobody makes again —
// a sequential name, or one carrying a protected create's GUID — whose
// first attempt is a plain delete, two requests less. While a node of this
// session is at the path, no other client can create one there, and only
// the participant that owns it deletes it; so the first attempt deletes
// that node, unless somebody else deleted it and made one again by hand at
// that very name. After a lost answer it proves the node as DeleteCreated
// does.
func (c *Client) deleteUnique(ctx context.Context, path string, czxid int64) error {
	return c.deleteCreated(ctx, path, czxid, true)
}

func (c *Client) deleteCreated(ctx context.Context, path string, czxid int64, unique bool) error {
	if czxid == 0 {
		return errtext.Errorf("%w: delete of %s needs the czxid of the node", ErrInvalidOption, path)
	}
	sp := c.server(path)
	attempt := 0
	return c.call(ctx, "delete", path, inSession, func(ctx context.Context, zc *zk.Conn) error {
		attempt++
		switch {
		case attempt > 1:
			return c.deleteIf(ctx, zc, nil, sp, createdAt(czxid), nil)
		case unique:
			return c.run(ctx, tracedErr(c, ctx, zc, "delete", sp, func() error { return zc.Delete(sp, -1) }))
		}
		return c.deleteIf(ctx, zc, nil, sp, createdAt(czxid),
			errtext.Errorf("connection: delete %s: %w (no node created at %#x)", path, zk.ErrNoNode, czxid))
	})
}

// createdAt tells the node created at czxid from any other at its path.
func createdAt(czxid int64) func([]byte, *zk.Stat) bool {
	return func(_ []byte, stat *zk.Stat) bool { return stat.Czxid == czxid }
}

// deleteIf deletes server path sp if the node there is the one ours says
// it is, at the version read; when it is gone or another's it returns
// missing (nil: nothing of ours left is done). The read is synced
// (syncedRead): it sees a write of ours whose answer was lost, and a
// deletion the server it is sent to has not applied yet. With sess, errors
// are mapped as in sess (a lost session is final); without, the caller's
// call does it.
func (c *Client) deleteIf(ctx context.Context, zc *zk.Conn, sess *Session, sp string, ours func([]byte, *zk.Stat) bool, missing error) error {
	mapped := func(err error) error {
		if sess != nil {
			return c.opErr(sess, err)
		}
		return err
	}
	var (
		got  []byte
		stat *zk.Stat
	)
	err := c.syncedRead(ctx, zc, sp, func() (err error) {
		got, stat, err = value2(c, ctx, func() ([]byte, *zk.Stat, error) {
			t := c.sent(ctx, zc, "getData", sp, false, 0)
			data, stat, err := zc.Get(sp)
			t.answered(err, 0)
			return data, stat, err
		})
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return missing
	}
	if err != nil {
		return mapped(err)
	}
	if !ours(got, stat) {
		return missing // ours went, or never was: this one is another's
	}
	return c.deleteAt(ctx, zc, sess, sp, stat)
}

// syncedRead runs read, a read of server path sp on handle zc, behind a
// sync: the server answers a session's requests in order, and a read
// after a sync once it has caught up with the leader. The sync goes
// through the wire client, and read is queued as the sync is written, so
// both take one round trip and go on the same connection — unless that
// connection fails before the read is written, when the sync is never
// answered: the outcome is then the sync's failure, and the caller's call
// retries. Without the wire client (zc no longer the client's handle) the
// sync is a request of its own, answered before read is sent.
func (c *Client) syncedRead(ctx context.Context, zc *zk.Conn, sp string, read func() error) error {
	blocking := func() error {
		err := c.run(ctx, tracedErr(c, ctx, zc, "sync", sp, func() error { _, err := zc.Sync(sp); return err }))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return read()
	}
	tr := c.trackerOf(zc)
	if tr == nil {
		return blocking()
	}
	written := make(chan struct{})
	synced := make(chan error, 1)
	req := wire.EncodeSync(sp)
	traced, notSent := c.tracedWire(ctx, tr.SessionID(), "sync", sp, false, req, func(_ int64, code int32, _ []byte, err error) {
		if err == nil && code != 0 {
			if err = wire.ReplyErr(code); errors.Is(err, zk.ErrNoNode) {
				err = nil // a sync of a path gone still catches the server up
			}
		}
		synced <- err
	})
	if err := tr.SendWritten(tr.SessionID(), req, func() { close(written) }, traced); err != nil {
		notSent(err)
		return blocking()
	}
	select {
	case <-written:
	case err := <-synced:
		return err // dropped before its turn: the connection failed
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := read(); err != nil {
		return err
	}
	select {
	case err := <-synced:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deleteAt deletes server path sp at the version of stat, the node just
// read; a node that changed in between (BadVersion) is read again by the
// caller's retry. NoNode means it is gone: done.
func (c *Client) deleteAt(ctx context.Context, zc *zk.Conn, sess *Session, sp string, stat *zk.Stat) error {
	err := c.run(ctx, tracedErr(c, ctx, zc, "delete", sp, func() error { return zc.Delete(sp, stat.Version) }))
	switch {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		return nil
	case errors.Is(err, zk.ErrBadVersion):
		return retry.Again(err)
	case sess != nil:
		return c.opErr(sess, err)
	}
	return err
}

// value2 is value for a call with two results.
func value2[A, B any](c *Client, ctx context.Context, f func() (A, B, error)) (A, B, error) {
	type pair struct {
		a A
		b B
	}
	p, err := value(c, ctx, func() (pair, error) { a, b, err := f(); return pair{a, b}, err })
	return p.a, p.b, err
}
