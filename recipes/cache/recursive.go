package cache

import (
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
)

// WithRecursiveWatch: the cache follows its subtree with one persistent
// recursive watch on the root, and its reads set no watch.
//
// The watch lives on one connection. On each connection the worker sets
// it before it sends any read there (dispatch waits for watchGen to be the
// connection's connGen), so that a change made after a read is reported
// by the watch: the first load, and every reload, follow the server from
// the moment they start. The server notifies, in zxid order on the
// connection, NodeCreated, NodeDataChanged and NodeDeleted for the root
// and every node below it, and each notification reaches the inbox before
// the answers of the reads sent after the change: drain handles it before
// any such answer. What it does:
//
//   - NodeDataChanged of a node in the view: its data is read again.
//   - NodeCreated of a node the view has an entry for (the root, or a
//     node a listing found first): its data is read again. Of another
//     node: its parent's listing is read again, if the parent is in the
//     view and listed (within WithMaxDepth, and descended into by the
//     Selector); applyListing makes the entry (Selector.Accept decides)
//     and reads the new node as on a load, its children too. The
//     listing, not the node alone, because the node may be the child of
//     a newer node at the parent's path, whose read has not come yet
//     (awaitParent): the reads decide, as with one-shot watches.
//   - NodeDeleted of a node below the root: it and its subtree leave the
//     view at once (Deleted, children first). No later answer can bring
//     it back: the answers of reads sent before the deletion are of
//     removed entries and dropped, those sent after find no node. The
//     parent's listing is read again, as a child watch would have it:
//     its child fields (Cversion, NumChildren, Pzxid) moved, and the
//     view holds a node's Stat as the server gives it once the changes
//     stop. NodeDeleted of the root: its data is read again, for
//     an answer of a read in flight may be older than the deletion and
//     still be applied (the root's entry stays).
//   - Any other node's notification (beyond the depth, not selected) is
//     ignored: no entry, or a parent not listed.
//
// The server does not replay, for a persistent watch, the changes made
// while the client had no connection: after every reconnect in the same
// session (state) the view is untrusted and rechecked whole
// (recheckAll: the machinery of a new session, whose loss rechecks it
// the same way), with reads sent once the watch is set again; trust
// comes back when the sync after the reconnect, the watch and the
// recheck are all done (maybeTrust).

// dispatchWatch sets the recursive watch on the current connection if it
// is not set there.
func (w *worker) dispatchWatch() {
	if !w.rec || w.watchGen == w.connGen || w.watchInflight || w.watchParked || !w.connUp {
		return
	}
	w.watchInflight = true
	w.c.wg.Add(1)
	go w.read(job{addWatch: true, path: w.c.root, epoch: w.epoch, gen: w.connGen})
}

// watchDone handles the answer to an addWatch. An addWatch changes no
// node, and adding a watch the connection has changes nothing: it is sent
// in whatever session the client has, and again after a failure.
func (w *worker) watchDone(r *result) {
	w.watchInflight = false
	switch {
	case w.c.ctx.Err() != nil:
		return
	case errors.Is(r.err, connection.ErrClosed):
		w.clientGone(r.err)
		return
	case errors.Is(r.err, connx.ErrWatchUnsupported):
		w.clientGone(errtext.Errorf("cache: %s: %w", w.c.root, watch.ErrUnsupported))
		return
	case r.err != nil:
		connx.Of(w.client).Logger().Debug("cache: setting the recursive watch failed, will retry", "path", w.c.root, "error", r.err)
		w.watchParked = true
		w.armRetry()
		return
	}
	w.retryDelay = minRetryDelay
	if r.gen != w.connGen || !w.connUp {
		// Set on a connection lost since: dispatchWatch sets it on the
		// next one.
		return
	}
	w.watchGen = r.gen
	w.c.watches.Store(1)
}

// recursiveFired handles a notification of the recursive watch.
func (w *worker) recursiveFired(ev zk.Event) {
	e := w.lookup(ev.Path)
	switch ev.Type {
	case zk.EventNodeDataChanged:
		if e != nil {
			w.fire(&e.data, ev)
		}
	case zk.EventNodeCreated:
		if e != nil {
			w.fire(&e.data, ev)
			return
		}
		if ev.Path == w.c.root {
			return
		}
		dir, _ := split(ev.Path)
		if p := w.lookup(dir); p != nil && p.listable {
			w.fire(&p.listing, ev)
		}
	case zk.EventNodeDeleted:
		switch {
		case e == nil:
		case e.parent == nil:
			w.fire(&e.data, ev)
		default:
			p := e.parent
			w.vanish(e)
			// The parent's child fields (Cversion, NumChildren, Pzxid)
			// changed: its listing says how, silently (refresh).
			w.fire(&p.listing, ev)
		}
	}
}
