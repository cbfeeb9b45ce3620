package connection

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/conntypes"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Watch is a one-shot watch on a node, made by GetWatch (its data),
// ChildrenWatch (its children) or ExistsWatch (its creation, or its data
// while it exists). Done closes at the first change after the watch was
// set (node created, data changed, node deleted, a child created or
// deleted), or when the watch ends with its session.
//
// Watches are shared. ZooKeeper 3.6 can remove a watch, go-zookeeper
// cannot ask it to, so a wait that gives up leaves its watch registered
// until the node changes. GetWatch therefore gives every caller that
// watches the same node in the same session, while a watch is pending, that
// one watch: an abandoned wait begun again costs no new watch. The bound:
// at most one pending watch of each kind per node per session, on the
// client and on the server, whatever the number of abandoned waits; it
// goes when the node changes, is created or deleted, or the session ends.
//
// A watch costs no goroutine while it is pending, and little memory: its
// channel is made by the first Done, its event when it fires.
type Watch struct {
	mu *sync.Mutex // the client's watchMu
	// Under mu:
	next  *Watch        // the next Watch of the same node and kind (Client.watches)
	done  chan struct{} // made by Done; closed when the watch fires
	ev    *zk.Event     // what fired it; set before done is closed
	ready bool          // the read that set it has returned: it may be shared
	fired bool
	own   bool         // registered by the client's setWatches, not go-zookeeper's read (bulk.go)
	hook  watchHook    // the first hook, the usual one
	more  *[]watchHook // any others: 64 bytes a Watch
	// armedAt is when its read was sent, as time since monoStart; 0
	// unless an observer of notifications reads it (watchedSince).
	armedAt int64
}

// watchHook is told when a Watch fires (addHook).
type watchHook = conntypes.Hook[*Watch]

// hook is a function afterFire registered.
type hook struct{ f func(zk.Event) }

func (h *hook) WatchFired(_ *Watch, ev zk.Event) { h.f(ev) }

// afterFire arranges for f to be called once with the event when the watch
// fires — synchronously, in the goroutine that fires it (go-zookeeper's
// receive loop), before any later event of the session is handled; at once
// if it has fired already. So f sees the session's events in their order,
// and must be quick: cancel a context, start a goroutine, never call the
// client. stop unregisters f and reports whether it did so before f was
// called.
//
// A recipe ends a hold with it the moment its node's deletion is heard:
// unlike a goroutine that waits on Done, it costs nothing while the watch
// is pending, and a waiter that then sees a later event (its predecessor's
// deletion, say) knows the hold's end was already seen.
func (w *Watch) afterFire(f func(zk.Event)) (stop func() bool) {
	h := &hook{f}
	if !w.addHook(h) {
		return func() bool { return false }
	}
	return func() bool { return w.removeHook(h) }
}

// AfterFunc arranges for f to be called once, in its own goroutine, with
// the watch's event when the watch fires — for a change of its node, or
// with EventNotWatching when it ends with its session (Err then wraps
// ErrSessionLost) — or at once, in its own goroutine, if the watch has
// fired already. Like context.AfterFunc, it costs no goroutine while the
// watch is pending, so a program can follow many watches; and since f
// runs on a goroutine of its own it may block and call the client. The
// event's path is a server path (with the namespace), as Event's.
//
// stop unregisters f: it reports true when it stopped f from being run,
// false when f was already started or stop was called before. It does
// not wait for a running f. A nil f is nothing to run: AfterFunc
// registers nothing, and stop reports false.
func (w *Watch) AfterFunc(f func(zk.Event)) (stop func() bool) {
	if f == nil {
		return func() bool { return false }
	}
	return w.afterFire(func(ev zk.Event) { go f(ev) })
}

// addHook is afterFire with a value in place of a function: h is told of
// the event once, on the same terms (at once, in this goroutine, if the
// watch has fired: then addHook returns false). h must be comparable, a
// pointer, for removeHook to find it. A hook costs the watch no
// allocation; a cache with a watch per node uses it.
func (w *Watch) addHook(h watchHook) (pending bool) {
	w.mu.Lock()
	if w.fired {
		ev := *w.ev
		w.mu.Unlock()
		h.WatchFired(w, ev)
		return false
	}
	switch {
	case w.hook == nil:
		w.hook = h
	case w.more == nil:
		w.more = &[]watchHook{h}
	default:
		*w.more = append(*w.more, h)
	}
	w.mu.Unlock()
	return true
}

// removeHook unregisters h and reports whether it did so before h was
// told of the event.
func (w *Watch) removeHook(h watchHook) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hook == h {
		w.hook = nil
		if w.more != nil && len(*w.more) > 0 {
			// Two statements: in one assignment the index could be read
			// after the Delete has shifted the slice.
			w.hook = (*w.more)[0]
			*w.more = slices.Delete(*w.more, 0, 1)
		}
		return true
	}
	if w.more == nil {
		return false
	}
	i := slices.Index(*w.more, h)
	if i < 0 {
		return false
	}
	*w.more = slices.Delete(*w.more, i, i+1)
	return true
}

// Done is closed when the read that set the watch can no longer be trusted
// to be current: the watch fired for a change of its node, or it ended
// with its session (Err tells which).
func (w *Watch) Done() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done == nil {
		if w.fired {
			w.done = chanx.Closed
		} else {
			w.done = make(chan struct{})
		}
	}
	return w.done
}

// Fired reports whether the watch has fired, for a change of its node or
// the end of its session: Event and Err are then valid. Unlike a look at
// Done, it makes no channel: a waiter told by a watchHook (addHook) that
// something fired finds what with it.
func (w *Watch) hasFired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

// Event is what fired the watch; valid once Done is closed. Its path is a
// server path (with the namespace).
func (w *Watch) Event() zk.Event {
	<-w.Done()
	return *w.ev
}

// Err returns nil if the watch fired for a change of its node, and an
// error wrapping ErrSessionLost if it ended with its session. Valid once
// Done is closed.
func (w *Watch) Err() error {
	ev := w.Event()
	if ev.Type == zk.EventNotWatching {
		return errtext.Errorf("%w: watch ended: %w", ErrSessionLost, ev.Err)
	}
	return nil
}

// GetWatch is Get that also sets a data watch, shared (see Watch). The data and Stat are
// read when GetWatch is called; the watch may be older than the read (it
// was set by an earlier caller), so Done may close for a change the read
// already shows — a spurious wake-up, never a missed one. It is safe in
// any session: the watch belongs to the session of the read.
func (c *Client) GetWatch(ctx context.Context, path string) (data []byte, stat *zk.Stat, w *Watch, err error) {
	n, w, err := c.sharedRead(ctx, "get", path, dataWatch,
		func(zc *zk.Conn, sp string) (n node, err error) { n.data, n.stat, err = zc.Get(sp); return },
		func(zc *zk.Conn, sp string) (n node, err error) { n.data, n.stat, n.ch, err = zc.GetW(sp); return })
	return n.data, n.stat, w, err
}

// ChildrenWatch is Children that also sets a child watch, shared (see
// Watch), on the same
// terms as GetWatch: the listing is read when it is called, the watch may
// be older, so a wake-up may be spurious but is never missed. It is safe
// in any session.
func (c *Client) ChildrenWatch(ctx context.Context, path string) (children []string, stat *zk.Stat, w *Watch, err error) {
	n, w, err := c.sharedRead(ctx, "children", path, childWatch,
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
func (c *Client) sharedRead(ctx context.Context, what, path string, kind watchKind,
	plain, watched func(zc *zk.Conn, spath string) (node, error)) (out node, w *Watch, err error) {
	return c.sharedReadAt(ctx, what, path, c.server(path), kind, plain, watched)
}

// sharedReadAt is sharedRead of the server's node spath, which path names
// in errors: the namespace is not applied (the ensemble tracker reads
// /zookeeper/config of every client so).
func (c *Client) sharedReadAt(ctx context.Context, what, path, spath string, kind watchKind,
	plain, watched func(zc *zk.Conn, spath string) (node, error)) (out node, w *Watch, err error) {
	err = c.call(ctx, what, path, anySession, func(ctx context.Context, zc *zk.Conn) error {
		key := watchKey{zc, spath, kind}
		c.watchMu.Lock()
		shared := c.sharedLocked(key)
		c.watchMu.Unlock()
		op := requestOp(kind)
		if shared != nil {
			n, err := value(c, ctx, traced(c, ctx, zc, op, key.spath, false, func() (node, error) { return plain(zc, key.spath) }))
			if err == nil {
				out, w = n, shared
			}
			return err
		}
		// The goroutine that sends the read settles its watch, so a caller
		// that gives up still leaves a watch that was set to the next one.
		type read struct {
			n node
			w *Watch
		}
		r, err := value(c, ctx, func() (read, error) {
			w := c.arm(key)
			t := c.sent(ctx, zc, op, key.spath, true, 0)
			n, err := watched(zc, key.spath)
			t.answered(err, 0)
			c.armed(key, w, err == nil)
			return read{n, w}, err
		})
		if err != nil {
			return err
		}
		out, w = r.n, r.w
		return nil
	})
	return out, w, err
}

// How a watch fires without a goroutine of its own. go-zookeeper hands
// every watch event to the handle's event callback before it sends it on
// its own watch channels, which the client never reads; the callback,
// watchEvent, fires every Watch of the event's node and kind. A Watch is
// armed — known to the callback — before its read is sent, so an event
// that comes between go-zookeeper's registration of the watch (when the
// read is answered) and the read's return to the caller fires it all the
// same: none is missed. An event of an older watch of the node that comes
// while the read is on its way fires it too: a spurious wake-up, which
// Watch allows. Only a Watch whose read returned with the watch set is
// shared (ready): a later caller's plain read is then certainly ordered
// after the watch on the server.

// The pending Watches of one key form a list (Watch.next), usually of
// one: a Watch is shared while it is pending.
type watchKey struct {
	zc    *zk.Conn
	spath string
	kind  watchKind
}

// watchKind is what a watch waits for, as go-zookeeper files it: the
// tracker names the watches it waits to see registered again the same way.
type watchKind = wire.WatchKind

const (
	dataWatch  = wire.DataWatch  // GetWatch: the node's data changes or it goes
	childWatch = wire.ChildWatch // ChildrenWatch: a child comes or goes, or the node goes
	existWatch = wire.ExistWatch // ExistsWatch: the node comes, or changes or goes
)

// requestOp is ZooKeeper's name of the read that sets a watch of kind.
func requestOp(kind watchKind) string {
	switch kind {
	case childWatch:
		return "getChildren2"
	case existWatch:
		return "exists"
	}
	return "getData"
}

// arm records a new Watch of key whose read is about to be sent.
func (c *Client) arm(key watchKey) *Watch {
	w := &Watch{mu: &c.watchMu}
	if c.watchesTimed() {
		w.armedAt = int64(time.Since(monoStart))
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.watches == nil {
		c.watches = map[watchKey]*Watch{}
	}
	last := c.watches[key]
	if last == nil {
		c.watches[key] = w
		return w
	}
	for last.next != nil {
		last = last.next
	}
	last.next = w
	return w
}

// armed settles w once its read returned: with the watch set (ok) it may
// be shared, unless it fired meanwhile; without, it is forgotten.
func (c *Client) armed(key watchKey, w *Watch, ok bool) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	switch {
	case w.fired:
	case ok:
		w.ready = true
	default:
		first := c.watches[key]
		switch {
		case first == w && w.next == nil:
			delete(c.watches, key)
		case first == w:
			c.watches[key] = w.next
		default:
			for p := first; p != nil; p = p.next {
				if p.next == w {
					p.next = w.next
					break
				}
			}
		}
		w.next = nil
	}
}

// sharedLocked returns a pending watch of key that may be shared, or nil.
func (c *Client) sharedLocked(key watchKey) *Watch {
	for w := c.watches[key]; w != nil; w = w.next {
		if w.ready {
			return w
		}
	}
	return nil
}

// watchEvent fires the watches an event of handle zc concerns: a change
// fires the node's watches of the kinds go-zookeeper fires for it (a
// creation exists watches, a data change data and exists watches, a
// deletion all three), the end of the handle's watches (EventNotWatching,
// at expiry or close) every kind. It runs on go-zookeeper's receive loop
// and must not block.
func (c *Client) watchEvent(zc *zk.Conn, ev zk.Event) {
	kinds := firedKinds(ev.Type)
	if kinds == nil {
		return
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	for _, k := range kinds {
		c.fireLocked(watchKey{zc, ev.Path, k}, ev)
	}
	c.ownEventLocked(zc, ev)
}

// The kinds of watches an event of type t fires, nil for none.
var (
	firesAll      = []watchKind{dataWatch, childWatch, existWatch}
	firesExists   = []watchKind{existWatch}
	firesData     = []watchKind{dataWatch, existWatch}
	firesChildren = []watchKind{childWatch}
)

// firedKinds returns the kinds of watches an event of type t fires.
func firedKinds(t zk.EventType) []watchKind {
	switch t {
	case zk.EventNodeDeleted, zk.EventNotWatching:
		return firesAll
	case zk.EventNodeCreated:
		return firesExists
	case zk.EventNodeDataChanged:
		return firesData
	case zk.EventNodeChildrenChanged:
		return firesChildren
	}
	return nil
}

func (c *Client) fireLocked(key watchKey, ev zk.Event) {
	w := c.watches[key]
	if w == nil {
		return
	}
	delete(c.watches, key)
	for w != nil {
		next := w.next
		w.next = nil
		w.fireLocked(ev)
		w = next
	}
}

// endWatches fires every watch of handle zc, now closed, with
// EventNotWatching and err. go-zookeeper does the same, but from a
// goroutine that its Close does not wait for.
func (c *Client) endWatches(zc *zk.Conn, err error) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	for key := range c.watches {
		if key.zc == zc {
			c.fireLocked(key, zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: key.spath, Err: err})
		}
	}
	c.endOwnLocked(zc, err)
}

func (w *Watch) fireLocked(ev zk.Event) {
	if w.fired {
		return
	}
	w.fired, w.ev = true, &ev
	if w.done != nil {
		close(w.done)
	}
	first, more := w.hook, w.more
	w.hook, w.more = nil, nil
	if first != nil {
		first.WatchFired(w, ev)
	}
	if more != nil {
		for _, h := range *more {
			h.WatchFired(w, ev)
		}
	}
}
