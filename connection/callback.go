package connection

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Requests answered through a callback.
//
// A go-zookeeper call blocks its goroutine until the answer comes or the
// connection closes, and takes no context: a request whose context can
// end runs on a goroutine of its own (valueThen), so that its caller can
// return when the context does. A lock's waiter makes two requests as it
// joins the line — its node's create and the listing right behind it —
// and in a burst of waiters those goroutines (their stacks, and the
// descriptors the runtime keeps once made) cost more than the waiters
// themselves. So these two go through the wire client (wire.Tracker.Send):
// the request is queued on the handle's connection, in its one session,
// and its answer comes to a callback, on go-zookeeper's receive goroutine
// or wherever the connection is found failed; the caller waits for it,
// or for its context, on its own goroutine. A request the tracker does
// not take (no connection of the handle's session now) goes through
// go-zookeeper as before, which holds it for the session's next
// connection.

// createAnswer is the answer to a create2 sent on the wire.
type createAnswer struct {
	path string
	st   wire.Created
	err  error
}

// createOnWire sends one create2 of server path spath on handle zc's
// connection, in session sess, and waits for its answer or for ctx: the
// node's path and Stat, or the error go-zookeeper's create would have
// returned (zk.ErrNoNode, zk.ErrNodeExists..., zk.ErrConnectionClosed
// wrapped when the answer was lost, zk.ErrClosing when the handle ended
// first). onWire is false, and nothing was sent, when the tracker did not
// take the request: the caller sends it through go-zookeeper.
//
// written, if not nil, is called as the request is written on the
// connection, before its answer, from the connection's writer: a request
// it sends goes out behind the create (wire.Tracker.SendWritten). When ctx ends first, createOnWire returns ctx's
// error (unansweredError) and abandoned is called with the answer once it
// comes, on a goroutine of the client's (Close waits for it), as
// valueThen's is.
func (c *Client) createOnWire(ctx context.Context, zc *zk.Conn, sess *Session, spath string, data []byte, mode Mode, written func(), abandoned func(created string, err error)) (created string, st wire.Created, onWire bool, err error) {
	tr := c.trackerOf(zc)
	if tr == nil {
		return "", wire.Created{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		return "", wire.Created{}, true, err
	}
	var (
		mu   sync.Mutex
		gone bool // the caller left
	)
	answer := make(chan createAnswer, 1)
	done := func(_ int64, code int32, body []byte, err error) {
		a := createAnswer{err: err}
		switch {
		case err != nil && tr.Closed():
			// As go-zookeeper fails a request its handle's Close cut
			// short: the handle will not answer, and its session is over.
			a.err = zk.ErrClosing
		case err != nil:
		case code != 0:
			a.err = wire.ReplyErr(code)
		default:
			var stat *zk.Stat
			if a.path, stat, a.err = wire.DecodeCreate2(body); a.err != nil {
				// A reply that does not parse: the create may have
				// applied, as if its answer were lost.
				a.err = errtext.Errorf("%w: %w", zk.ErrConnectionClosed, a.err)
			} else {
				a.st = wire.Created{Czxid: stat.Czxid, Owner: stat.EphemeralOwner}
			}
		}
		mu.Lock()
		if !gone {
			answer <- a // buffered; sent under mu, so the caller either takes it or has left
			mu.Unlock()
			return
		}
		mu.Unlock()
		c.mu.Lock()
		if c.closed {
			// Closing the client ends the session, and its ephemeral
			// nodes with it; a background cleanup would not start now.
			c.mu.Unlock()
			return
		}
		c.wg.Add(1)
		c.mu.Unlock()
		go func() {
			defer c.wg.Done()
			abandoned(a.path, a.err)
		}()
	}
	req := wire.EncodeCreate2(spath, data, aclFor(c.opts.acl, c.client(spath)), int32(mode))
	traced, notSent := c.tracedWire(ctx, sess.ID(), "create2", spath, false, req, done)
	if err := tr.SendWritten(sess.ID(), req, written, traced); err != nil {
		notSent(err)
		return "", wire.Created{}, false, nil
	}
	select {
	case a := <-answer:
		return a.path, a.st, true, a.err
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		select {
		case a := <-answer: // answered meanwhile: its result counts
			return a.path, a.st, true, a.err
		default:
		}
		gone = true
		return "", wire.Created{}, true, unansweredError{ctx.Err()}
	}
}

// childrenOnWire sends childrenThen's listing on the wire, in the current
// session: one attempt, whose answer, or the failure of its connection,
// goes to then (which must not block). It reports false, having sent
// nothing, when there is no session now or the tracker does not take the
// request.
func (c *Client) childrenOnWire(ctx context.Context, path string, then func(children []string, stat *zk.Stat, err error)) bool {
	if ValidatePath(path) != nil || ctx.Err() != nil || c.opts.namespace != "" && !c.nsReady.Load() {
		return false
	}
	c.mu.Lock()
	tr, sess, closed := c.tr, c.session, c.closed
	c.mu.Unlock()
	if closed || sess == nil {
		return false
	}
	done := func(_ int64, code int32, body []byte, err error) {
		var (
			children []string
			stat     *zk.Stat
		)
		switch {
		case err != nil:
		case code != 0:
			err = wire.ReplyErr(code)
		default:
			children, stat, err = wire.DecodeGetChildren2(body)
		}
		if err != nil {
			if serr := c.sessionErr(sess, err); serr != nil {
				err = serr
			}
			then(nil, nil, errtext.Errorf("connection: children %s: %w", path, err))
			return
		}
		then(children, stat, nil)
	}
	sp := c.server(path)
	req := wire.EncodeGetChildren2(sp)
	traced, notSent := c.tracedWire(ctx, sess.ID(), "getChildren2", sp, false, req, done)
	if err := tr.Send(sess.ID(), req, traced); err != nil {
		notSent(err)
		return false
	}
	return true
}

// wireErr is the outcome of a request answered through a callback: err
// when no answer came, else the server's error code as go-zookeeper's
// error (nil for success).
func wireErr(code int32, err error) error {
	if err != nil || code == 0 {
		return err
	}
	return wire.ReplyErr(code)
}
