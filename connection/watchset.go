package connection

import (
	"context"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// watchData sets a data watch on each of paths, as GetWatch would have
// right after a read of the tree made at zxid relative, in one request:
// a setWatches (opcode 101) with relative as its relativeZxid, whose
// watches the client keeps itself (bulk.go) and registers again after a
// reconnect of the session (internal/wire/restore.go). The watches are
// returned in the order of paths, and the server handles them in that order
// (DataTree.setWatches of ZooKeeper 3.8):
//
//   - a node that is missing fires its watch at once with NodeDeleted;
//   - a node whose data changed after relative (mzxid > relative) fires
//     its watch at once with NodeDataChanged;
//   - on any other node the watch is registered, and fires at the next
//     change, as a GetWatch's does.
//
// Those events are sent before the answer, in the order of paths, and the
// client fires the Watches in the order it reads them. For a node that
// was there at relative, nothing after relative is missed: its deletion
// since fires NodeDeleted, a change of its data NodeDataChanged (but see
// shared watches below). A change at or before relative is not reported
// (the read shows it); a relative older than the read's only adds
// spurious wake-ups — and the client writes into a setWatches no zxid
// newer than the last it heard while its watches were registered
// (internal/wire/restore.go), so relative should be that of a read of
// this client.
// Unlike GetWatch, a missing node is not an error: it fires the watch. A
// node created after relative at a path that was empty then fires
// NodeDataChanged, its mzxid being newer.
//
// Watches are shared, as GetWatch's are (Watch): a node with a pending
// data watch of the session (set by an earlier read or WatchData, and
// not fired) is given that watch, and left out of the request — with
// none left, no request is sent. Such a watch fires at the node's
// deletion, whenever that comes (the node was there when it was set);
// a change of the node's data between relative and the time it was set
// is not reported to it. So repeated calls on the same nodes (a waiter
// that gives up and queues again) keep one watch per node, on the client
// and on the server.
//
// The request goes on the connection of session sess only, never in
// another session: if sess is not the client's current session the error
// wraps ErrSessionLost (or sess's own error once it has ended). It is one
// attempt: a connection lost before the answer fails the call with an
// error wrapping zk.ErrConnectionClosed, and no watch of it is returned
// or kept (the server dropped those it had registered with the
// connection). When ctx ends first the watches stay, shared as pending
// watches are (Watch), until their nodes change.
func (c *Client) watchData(ctx context.Context, sess *Session, relative int64, paths []string) ([]*Watch, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	spaths := make([]string, len(paths))
	size := 0
	for i, p := range paths {
		if err := ValidatePath(p); err != nil {
			return nil, err
		}
		spaths[i] = c.server(p)
		size += 4 + len(spaths[i])
	}
	if size > maxBulkRequest {
		return nil, errtext.Errorf("%w: %d watches in one request (%d bytes, at most %d)", ErrInvalidOption, len(paths), size, maxBulkRequest)
	}
	if err := c.sessionErr(sess, nil); err != nil {
		return nil, err
	}
	zc, cur, err := c.current(pinSession(ctx, sess))
	if err != nil {
		return nil, err
	}
	if cur != sess {
		if err := c.sessionErr(sess, nil); err != nil {
			return nil, err
		}
		return nil, errtext.Errorf("%w: session %#x is not the current one", ErrSessionLost, sess.ID())
	}
	c.mu.Lock()
	tr, same := c.tr, c.zc == zc
	c.mu.Unlock()
	if !same {
		return nil, c.watchSetErr(sess, wire.ErrNotConnected)
	}
	ws := make([]*Watch, len(spaths))
	var (
		keys  []watchKey // of the watches to set
		armed []*Watch
		send  []string
	)
	for i, sp := range spaths {
		key := watchKey{zc, sp, dataWatch}
		c.watchMu.Lock()
		ws[i] = c.sharedLocked(key)
		c.watchMu.Unlock()
		if ws[i] == nil {
			ws[i] = c.armOwn(key)
			keys, armed, send = append(keys, key), append(armed, ws[i]), append(send, sp)
		}
	}
	if len(send) == 0 {
		return ws, nil
	}
	answered := make(chan error, 1) // the callback never blocks
	done := func(_ int64, code int32, _ []byte, err error) {
		if err == nil && code != 0 {
			err = wire.CodeErr(code)
		}
		for i, k := range keys {
			c.armed(k, armed[i], err == nil)
		}
		answered <- err
	}
	req := wire.EncodeSetWatches(relative, send, nil, nil)
	traced, notSent := c.tracedWire(ctx, sess.ID(), "setWatches", "", true, req, done)
	if err := tr.Send(sess.ID(), req, traced); err != nil {
		notSent(err)
		for i, k := range keys {
			c.armed(k, armed[i], false)
		}
		return nil, c.watchSetErr(sess, err)
	}
	select {
	case err := <-answered:
		if err != nil {
			return nil, c.watchSetErr(sess, err)
		}
		return ws, nil
	case <-ctx.Done():
		return nil, errtext.Errorf("connection: set watches: %w", ctx.Err())
	}
}

// watchSetErr is the error of a WatchData whose answer did not come, or
// was a refusal.
func (c *Client) watchSetErr(sess *Session, err error) error {
	if serr := c.sessionErr(sess, err); serr != nil {
		return serr
	}
	return errtext.Errorf("connection: set watches: %w", c.mapErr(err))
}
