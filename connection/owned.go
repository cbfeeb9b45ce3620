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
		return c.deleteIf(ctx, zc, sess, sp, owned{data: true, is: func(got []byte, stat *zk.Stat) bool {
			return stat.EphemeralOwner == sess.ID() && bytes.Equal(got, data)
		}}, nil)
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
// there; the delete goes on the connection the read was answered on, or
// not at all (it is never kept for the next connection, whenever that
// comes). What the read cannot rule out is a node deleted and made again,
// at the same version, between the read and the delete: both by others,
// within one round trip. After a lost answer the delete is never sent
// again blind: it is read again the same way.
//
// It returns nil once that node is gone — deleted here, by an attempt
// whose answer was lost, or by anyone since — and an error matching
// zk.ErrNoNode when the first attempt found no node created at czxid. Its
// error matches ErrOutcomeUnknown only when a delete was written and not
// answered; nothing is written once ctx has ended. Cut off, it waits for
// the next connection (or ctx, or the session's end) and goes on at once.
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

// owned tells our node from another at its path: is, given its Stat and,
// if data, its data (else nil: the read is an exists, whatever the size
// of the data).
type owned struct {
	data bool
	is   func(data []byte, stat *zk.Stat) bool
}

// createdAt tells the node created at czxid from any other at its path.
func createdAt(czxid int64) owned {
	return owned{is: func(_ []byte, stat *zk.Stat) bool { return stat.Czxid == czxid }}
}

// deleteIf deletes server path sp if the node there is the one ours says
// it is, at the version read; when it is gone or another's it returns
// missing (nil: nothing of ours left is done). With sess, errors are
// mapped as in sess (a lost session is final); without, the caller's call
// does it.
//
// The sync, the read and the delete go on one connection of the handle
// (deleteOnLink): the read follows a sync, so that a server behind the
// leader does not show ours still there after someone deleted it, and
// the delete is never written on another connection than the read it was
// decided on — go-zookeeper keeps a request through a reconnect and
// writes it on the next connection, any time later. Without the wire
// client (zc no longer the client's handle) nothing is sent: the error
// says the connection was lost, and the caller's call tries again.
func (c *Client) deleteIf(ctx context.Context, zc *zk.Conn, sess *Session, sp string, ours owned, missing error) error {
	err := c.deleteOnLink(ctx, zc, sp, ours, missing)
	if err != nil && sess != nil && !isUnanswered(err) {
		return c.opErr(sess, err)
	}
	return err
}

// linkReply is the answer to a request sent on a wire.Link.
type linkReply struct {
	code int32
	body []byte // a copy
	err  error  // no answer: the link failed
}

// errLinkDown is deleteOnce's refusal for want of a connection: a request
// of its sequence could not be queued on its link, and nothing after it
// was sent.
var errLinkDown = errtext.Errorf("connection: no connection for the delete's requests: %w", zk.ErrConnectionClosed)

// deleteOnLink runs deleteOnce, and again as soon as the handle has a
// connection again each time it found none — not after the retry
// policy's backoff — until ctx ends, the session does, or the client
// closes. What it returns before a delete was written, or once one was
// answered, is marked answered (the call never says ErrOutcomeUnknown for
// it).
func (c *Client) deleteOnLink(ctx context.Context, zc *zk.Conn, sp string, ours owned, missing error) error {
	for {
		c.mu.Lock()
		tr, s := c.tr, c.session
		if c.zc != zc {
			tr = nil
		}
		c.mu.Unlock()
		if tr == nil || s == nil {
			// The handle was replaced, or has no session now.
			return answeredError{errtext.Errorf("connection: delete %s: %w", sp, wire.ErrNotConnected)}
		}
		opened := tr.Opened()
		err := c.deleteOnce(ctx, zc, tr, sp, ours, missing)
		if !errors.Is(err, errLinkDown) {
			return err
		}
		select {
		case <-opened:
		case <-s.Done():
			return answeredError{err} // the call says the session ended
		case <-c.stop:
			return answeredError{ErrClosed}
		case <-ctx.Done():
			return answeredError{ctx.Err()}
		}
	}
}

// deleteOnce is deleteIf's requests: a sync and a read of sp (a getData if
// ours needs the data, else an exists) sent together on the handle's
// current connection (one round trip), then, if the node read is ours and
// ctx has not ended, a delete at the version read on that same connection,
// refused if it has failed since. Only a delete written and not answered
// is returned unmarked.
func (c *Client) deleteOnce(ctx context.Context, zc *zk.Conn, tr *wire.Tracker, sp string, ours owned, missing error) error {
	id := tr.SessionID()
	link, err := tr.Link(id)
	if err != nil {
		return errLinkDown
	}
	send := func(op string, req []byte) (<-chan linkReply, error) {
		ch := make(chan linkReply, 1)
		traced, notSent := c.tracedWire(ctx, id, op, sp, false, req, func(_ int64, code int32, body []byte, err error) {
			ch <- linkReply{code: code, body: append([]byte(nil), body...), err: err}
		})
		if err := link.Send(req, traced); err != nil {
			notSent(err)
			return nil, errLinkDown
		}
		return ch, nil
	}
	synced, err := send("sync", wire.EncodeSync(sp))
	if err != nil {
		return err
	}
	op, req := "exists", wire.EncodeExists(sp)
	if ours.data {
		op, req = "getData", wire.EncodeGetData(sp)
	}
	read, err := send(op, req)
	if err != nil {
		return err
	}
	var r linkReply
	select {
	case r = <-read:
	case <-ctx.Done():
		return answeredError{ctx.Err()} // nothing sent that changes anything
	}
	// Answered in order: the sync's answer is in.
	if s := <-synced; s.err != nil {
		return answeredError{s.err}
	} else if serr := wire.ReplyErr(s.code); serr != nil && !errors.Is(serr, zk.ErrNoNode) {
		return answeredError{serr}
	}
	switch {
	case r.err != nil:
		return answeredError{r.err}
	case r.code != 0:
		if err := wire.ReplyErr(r.code); !errors.Is(err, zk.ErrNoNode) {
			return answeredError{err}
		}
		return missing
	}
	var (
		data []byte
		stat *zk.Stat
	)
	if ours.data {
		data, stat, err = wire.DecodeGetData(r.body)
	} else {
		stat, err = wire.DecodeExists(r.body)
	}
	if err != nil {
		return answeredError{errtext.Errorf("%w: %w", zk.ErrConnectionClosed, err)}
	}
	if !ours.is(data, stat) {
		return missing // ours went, or never was: this one is another's
	}
	if err := ctx.Err(); err != nil {
		return answeredError{err} // the caller gave up before the write
	}
	deleted, err := send("delete", wire.EncodeDelete(sp, stat.Version))
	if err != nil {
		return err // the connection failed since the read: nothing sent
	}
	select {
	case r = <-deleted:
	case <-ctx.Done():
		// Sent, or about to be on this connection only: it may apply.
		return unansweredError{ctx.Err()}
	}
	if r.err != nil {
		return r.err // written, or about to be, and its answer lost
	}
	switch err := wire.ReplyErr(r.code); {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		return nil
	case errors.Is(err, zk.ErrBadVersion):
		return answeredError{retry.Again(err)} // changed since the read: read again
	default:
		return answeredError{err}
	}
}
