package connection

import (
	"context"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// WatchData sets a data watch on each of paths, as GetWatch would have
// right after a read of the tree made at zxid relative, in one request:
// a setWatches (opcode 101) with relative as its relativeZxid, whose
// watches the client keeps itself (bulk.go) and registers again after a
// reconnect of the session (restore.go). The watches are returned in the
// order of paths, and the server handles them in that order
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
// since fires NodeDeleted, a change of its data NodeDataChanged. A change
// at or before relative is not reported (the read shows it); a relative
// older than the read's only adds spurious wake-ups. (Unlike GetWatch,
// a missing node is not an error: it fires the watch. A node created
// after relative at a path that was empty then fires NodeDataChanged, as
// its mzxid is newer.)
//
// The request goes on the connection of session sess only, never in
// another session: if sess is not the client's current session the error
// wraps ErrSessionLost (or sess's own error once it has ended). It is one
// attempt: a connection lost before the answer fails the call with an
// error wrapping zk.ErrConnectionClosed, and no watch of it is returned
// or kept (the server dropped those it had registered with the
// connection). When ctx ends first the watches stay, shared as pending
// watches are (Watch), until their nodes change.
func (c *Client) WatchData(ctx context.Context, sess *Session, relative int64, paths []string) ([]*Watch, error) {
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
	zc, cur, err := c.current(Pin(ctx, sess))
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
		return nil, c.watchSetErr(sess, errNotConnected)
	}
	keys := make([]watchKey, len(spaths))
	ws := make([]*Watch, len(spaths))
	for i, sp := range spaths {
		keys[i] = watchKey{zc, sp, dataWatch}
		ws[i] = c.armOwn(keys[i])
	}
	answered := make(chan error, 1) // the callback never blocks
	r := &injected{done: func(_ int64, code int32, _ []byte, err error) {
		if err == nil && code != 0 {
			err = codeErr(code)
		}
		for i, k := range keys {
			c.armed(k, ws[i], err == nil)
		}
		answered <- err
	}}
	if err := tr.inject(sess.ID(), encodeSetWatches(relative, spaths, nil, nil), r); err != nil {
		for i, k := range keys {
			c.armed(k, ws[i], false)
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
