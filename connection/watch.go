package connection

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Watch is a one-shot watch on a node, made by GetWatch (its data) or
// ChildrenWatch (its children). Done closes at the first change after the
// watch was set (data changed, node deleted, a child created or deleted),
// or when the watch ends with its session.
//
// Watches are shared. ZooKeeper 3.6 can remove a watch, go-zookeeper
// cannot ask it to, so a wait that gives up leaves its watch registered
// until the node changes. GetWatch therefore gives every caller that
// watches the same node in the same session, while a watch is pending, that
// one watch: an abandoned wait begun again costs no new watch. The bound:
// at most one pending data watch per node per session, on the client and
// on the server, whatever the number of abandoned waits; it goes when the
// node changes or is deleted, or the session ends.
type Watch struct {
	done chan struct{}
	ev   zk.Event
}

// Done is closed when the watch fired.
func (w *Watch) Done() <-chan struct{} { return w.done }

// Event is what fired the watch; valid once Done is closed. Its path is a
// server path (with the namespace).
func (w *Watch) Event() zk.Event {
	<-w.done
	return w.ev
}

// Err returns nil if the watch fired for a change of its node, and an
// error wrapping ErrSessionLost if it ended with its session. Valid once
// Done is closed.
func (w *Watch) Err() error {
	ev := w.Event()
	if ev.Type == zk.EventNotWatching {
		return fmt.Errorf("%w: watch ended: %w", ErrSessionLost, ev.Err)
	}
	return nil
}

type watchKey struct {
	zc       *zk.Conn
	spath    string
	children bool // a child watch, else a data watch
}

// GetWatch is GetW with a shared Watch (see Watch). The data and Stat are
// read when GetWatch is called; the watch may be older than the read (it
// was set by an earlier caller), so Done may close for a change the read
// already shows — a spurious wake-up, never a missed one. It is safe in
// any session: the watch belongs to the session of the read.
func (c *Client) GetWatch(ctx context.Context, path string) (data []byte, stat *zk.Stat, w *Watch, err error) {
	n, w, err := c.sharedRead(ctx, "get", path, false,
		func(zc *zk.Conn, sp string) (n node, err error) { n.data, n.stat, err = zc.Get(sp); return },
		func(zc *zk.Conn, sp string) (n node, err error) { n.data, n.stat, n.ch, err = zc.GetW(sp); return })
	return n.data, n.stat, w, err
}

// ChildrenWatch is ChildrenW with a shared Watch (see Watch), on the same
// terms as GetWatch: the listing is read when it is called, the watch may
// be older, so a wake-up may be spurious but is never missed. It is safe
// in any session.
func (c *Client) ChildrenWatch(ctx context.Context, path string) (children []string, stat *zk.Stat, w *Watch, err error) {
	n, w, err := c.sharedRead(ctx, "children", path, true,
		func(zc *zk.Conn, sp string) (n node, err error) { n.children, n.stat, err = zc.Children(sp); return },
		func(zc *zk.Conn, sp string) (n node, err error) {
			n.children, n.stat, n.ch, err = zc.ChildrenW(sp)
			return
		})
	return n.children, n.stat, w, err
}

// sharedRead reads path with a shared watch of one kind: when one is
// pending on the session's handle it reads plainly and returns that one;
// otherwise it reads with a new watch (watched) and shares it.
func (c *Client) sharedRead(ctx context.Context, what, path string, children bool,
	plain, watched func(zc *zk.Conn, spath string) (node, error)) (out node, w *Watch, err error) {
	err = c.call(ctx, what, path, anySession, func(ctx context.Context, zc *zk.Conn) error {
		key := watchKey{zc, c.server(path), children}
		c.watchMu.Lock()
		shared := c.watches[key]
		c.watchMu.Unlock()
		if shared != nil {
			n, err := value(c, ctx, func() (node, error) { return plain(zc, key.spath) })
			if err == nil {
				out, w = n, shared
			}
			return err
		}
		n, err := valueThen(c, ctx, func() (node, error) { return watched(zc, key.spath) }, func(n node, err error) {
			if err == nil {
				c.share(key, n.ch) // set all the same: offer it to the next waiter
			}
		})
		if err != nil {
			return err
		}
		out, w = n, c.share(key, n.ch)
		return nil
	})
	return out, w, err
}

// share makes a Watch of go-zookeeper's channel ch and offers it to later
// callers until it fires. The goroutine that waits for ch ends when the
// node changes or the handle's session ends (go-zookeeper then ends every
// watch, at expiry or Close).
func (c *Client) share(key watchKey, ch <-chan zk.Event) *Watch {
	w := &Watch{done: make(chan struct{})}
	c.watchMu.Lock()
	if c.watches == nil {
		c.watches = map[watchKey]*Watch{}
	}
	if _, ok := c.watches[key]; !ok {
		c.watches[key] = w
	}
	c.watchMu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		w.ev = zk.Event{Type: zk.EventNotWatching, Err: zk.ErrClosing}
		close(w.done)
		c.unshare(key, w)
		return w
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		ev, ok := <-ch
		if !ok {
			ev = zk.Event{Type: zk.EventNotWatching, Err: zk.ErrClosing}
		}
		w.ev = ev
		close(w.done)
		c.unshare(key, w)
	}()
	return w
}

func (c *Client) unshare(key watchKey, w *Watch) {
	c.watchMu.Lock()
	if c.watches[key] == w {
		delete(c.watches, key)
	}
	c.watchMu.Unlock()
}
