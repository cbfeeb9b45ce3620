package connection

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Persistent and recursive watches (ZooKeeper 3.6+): the client keeps a
// table of the subscribers of each watched server path and hands every
// notification the tracker reads (wire.Config.OnNotification) to those it
// concerns; addWatch and removeWatches are sent through the tracker. The
// server keeps one watch per connection and path, whatever the number of
// subscribers: the table decides when the last one is gone.
//
// Neither request is re-sent by the client. A persistent watch lives on
// one connection: go-zookeeper registers its own watches again on a new
// connection, not these, so the subscriber adds its watch again after
// every reconnect (an addWatch is safe in any session: it changes no
// node, and adding a watch the connection has is a no-op).

// addPersistentSink registers f for the notifications of a persistent
// watch on path (recursive: on path and every node below it, never a
// change of children below path); it sends nothing (addWatch does). f is
// called on go-zookeeper's receive goroutine, under the table's lock, and
// must not block; once removePersistent has taken the subscriber off the
// table it is not called again. A path watched in the other mode by a
// subscriber of the client is refused with
// conntypes.ErrWatchModeConflict: the server keeps one mode per
// connection and path, the one added last.
func (c *Client) addPersistentSink(path string, recursive bool, f func(zk.Event)) (*conntypes.PersistentSub, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, errtext.Errorf("%w: nil notification function", ErrInvalidOption)
	}
	sp := c.server(path)
	s := &conntypes.PersistentSub{ServerPath: sp, Recursive: recursive, Notify: f}
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	for _, o := range c.persist[sp] {
		if o.Recursive != recursive {
			return nil, errtext.Errorf("%w: %s", conntypes.ErrWatchModeConflict, path)
		}
	}
	if c.persist == nil {
		c.persist = map[string][]*conntypes.PersistentSub{}
	}
	c.persist[sp] = append(c.persist[sp], s)
	return s, nil
}

// dropSubLocked removes s from the table and reports whether it was the
// last subscriber of its path; persistMu is held.
func (c *Client) dropSubLocked(s *conntypes.PersistentSub) bool {
	subs := c.persist[s.ServerPath]
	i := slices.Index(subs, s)
	if i < 0 {
		return false // removed before
	}
	subs = append(subs[:i:i], subs[i+1:]...)
	if len(subs) == 0 {
		delete(c.persist, s.ServerPath)
		return true
	}
	c.persist[s.ServerPath] = subs
	return false
}

// onNotification hands a notification of server path sp to the
// subscribers it concerns: those of sp, and the recursive ones of sp's
// ancestors unless it is a change of children (a recursive watch reports
// none). A notification may come from another watch of the connection
// (a one-shot watch of a read): it still reports a change of a watched
// node, which the persistent watch reports too.
func (c *Client) onNotification(typ zk.EventType, _ zk.State, sp string) {
	switch typ {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
	default:
		return
	}
	ns := c.opts.namespace
	if ns != "" && sp != ns && !strings.HasPrefix(sp, ns+"/") {
		return
	}
	ev := zk.Event{Type: typ, State: zk.StateHasSession, Path: c.client(sp)}
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	if len(c.persist) == 0 {
		return
	}
	for p := sp; ; {
		for _, s := range c.persist[p] {
			if p == sp && !s.Recursive || s.Recursive && typ != zk.EventNodeChildrenChanged {
				s.Notify(ev)
			}
		}
		if p == "/" {
			return
		}
		i := strings.LastIndexByte(p, '/')
		if i == 0 {
			p = "/"
		} else {
			p = p[:i]
		}
	}
}

// addWatch sets a persistent watch on path (recursive: on path and every
// node below it) on the connection of the client's current session,
// waiting for a session if there is none, and returns that session once
// the server has answered. It is one attempt: a connection lost first
// fails it with an error wrapping zk.ErrConnectionClosed (the server
// dropped the watch with its connection, if it had set it). A server
// before 3.6 refuses it with conntypes.ErrWatchUnsupported.
func (c *Client) addWatch(ctx context.Context, path string, recursive bool) (*Session, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	mode := wire.AddWatchPersistent
	if recursive {
		mode = wire.AddWatchPersistentRecursive
	}
	sp := c.server(path)
	answered := make(chan error, 1) // the callback never blocks
	sess, err := c.sendWatchReq(ctx, "addWatch", sp, wire.EncodeAddWatch(sp, mode), false, func(_ int64, code int32, _ []byte, err error) {
		if err == nil {
			err = watchReplyErr(code)
		}
		answered <- err
	})
	if err != nil {
		return nil, err
	}
	select {
	case err := <-answered:
		if err != nil {
			return nil, c.watchReqErr(sess, "add watch", err)
		}
		return sess, nil
	case <-ctx.Done():
		return nil, errtext.Errorf("connection: add watch: %w", ctx.Err())
	}
}

// removePersistent takes s off the table and, if it was its path's last
// subscriber, the watch off the connection of the client's current
// session — decided and sent under the table's lock, so that an addWatch
// of a subscriber that comes after is written behind it — and waits for
// the answer. With
// no connection there is nothing to take off: the server dropped the
// watch with the connection it was set on. A watch the server does not
// have is not an error.
func (c *Client) removePersistent(ctx context.Context, s *conntypes.PersistentSub) error {
	// Any: ZooKeeper 3.8 keeps a recursive watch in its tables of data
	// and of child watches both, and removing the data watch alone
	// leaves the other.
	typ := wire.WatcherAny
	sp := s.ServerPath
	answered := make(chan error, 1)
	c.persistMu.Lock()
	if !c.dropSubLocked(s) {
		c.persistMu.Unlock()
		return nil
	}
	sess, err := c.sendWatchReq(ctx, "removeWatches", sp, wire.EncodeRemoveWatches(sp, typ), true, func(_ int64, code int32, _ []byte, err error) {
		if err == nil {
			err = watchReplyErr(code)
		}
		answered <- err
	})
	c.persistMu.Unlock()
	if err != nil {
		if errors.Is(err, wire.ErrNotConnected) || errors.Is(err, ErrSessionLost) || errors.Is(err, ErrClosed) {
			return nil
		}
		return err
	}
	select {
	case err := <-answered:
		if err == nil || errors.Is(err, wire.ErrNoWatcher) || errors.Is(err, zk.ErrConnectionClosed) {
			return nil
		}
		return c.watchReqErr(sess, "remove watch", err)
	case <-ctx.Done():
		return errtext.Errorf("connection: remove watch: %w", ctx.Err())
	}
}

// sendWatchReq sends req (op on server path sp) through the tracker on
// the current session's connection and returns that session; done is
// told the answer unless sendWatchReq fails. Called with the table's lock
// held (locked), it does not wait for a session: with none it fails with
// wire.ErrNotConnected. Otherwise it takes the lock to send: either way
// the order of the table's changes is the order of the requests on the
// wire (removePersistent).
func (c *Client) sendWatchReq(ctx context.Context, op, sp string, req []byte, locked bool, done wire.Done) (*Session, error) {
	var (
		sess *Session
		tr   *wire.Tracker
	)
	if locked {
		c.mu.Lock()
		sess, tr = c.session, c.tr
		closed := c.closed
		c.mu.Unlock()
		if closed || sess == nil {
			return nil, wire.ErrNotConnected
		}
	} else {
		zc, cur, err := c.current(ctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		tr, sess = c.tr, cur
		same := c.zc == zc
		c.mu.Unlock()
		if !same {
			return nil, c.watchReqErr(sess, op, wire.ErrNotConnected)
		}
	}
	traced, notSent := c.tracedWire(ctx, sess.ID(), op, sp, true, req, done)
	if !locked {
		c.persistMu.Lock()
	}
	err := tr.Send(sess.ID(), req, traced)
	if !locked {
		c.persistMu.Unlock()
	}
	if err != nil {
		notSent(err)
		if locked {
			return nil, err
		}
		return nil, c.watchReqErr(sess, op, err)
	}
	return sess, nil
}

// watchReplyErr is the error of a watch request's answer code.
func watchReplyErr(code int32) error {
	switch code {
	case 0:
		return nil
	case wire.CodeNoWatcher:
		return wire.ErrNoWatcher
	case wire.CodeUnimplemented:
		return conntypes.ErrWatchUnsupported
	}
	return wire.ReplyErr(code)
}

// watchReqErr is the error of a watch request whose answer did not come,
// or was a refusal.
func (c *Client) watchReqErr(sess *Session, op string, err error) error {
	if serr := c.sessionErr(sess, err); serr != nil {
		return serr
	}
	if errors.Is(err, conntypes.ErrWatchUnsupported) {
		return err
	}
	return errtext.Errorf("connection: %s: %w", op, c.mapErr(err))
}
