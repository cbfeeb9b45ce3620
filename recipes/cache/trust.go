package cache

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// The connection's states and sessions, and the view's trust.
func (w *worker) state(s connection.State) {
	switch s {
	case connection.Suspended:
		w.down(ErrSuspended)
	case connection.Lost:
		w.checkSession()
		w.down(ErrSuspended) // the session's error if checkSession saw it end
	case connection.Connected, connection.Reconnected, connection.ReadOnly:
		w.checkSession()
		if !w.connUp {
			w.connUp = true
			w.wantSync = true // the barrier before trust
			if w.rec && w.sess != nil {
				// The same session (a lost one was rechecked by lost):
				// the recursive watch went with the connection, and the
				// changes made meanwhile are not replayed.
				w.recheckAll()
			}
		}
		w.unpark()
	}
}

// down records a lost connection: the view is no longer trusted.
func (w *worker) down(err error) {
	if w.connUp {
		if w.rec && w.watchGen == w.connGen {
			w.c.watches.Store(0) // it went with the connection
		}
		w.connUp = false
		w.connGen++
	}
	w.untrust(err)
}

// checkSession notices that the session of the view ended.
func (w *worker) checkSession() {
	if w.sess == nil {
		return
	}
	err := w.sess.Err()
	switch {
	case err == nil:
	case errors.Is(err, connection.ErrClosed):
		w.clientGone(err)
	default:
		w.lost(err)
	}
}

// lost starts the rebuild after a lost session: every watch is gone, so
// every op is checked again in the next session, after a sync there, from
// the root down (see open). The view keeps its data until the reads say
// what changed, unless WithClearOnSessionLoss says to empty it.
func (w *worker) lost(err error) {
	w.sess = nil
	w.needSync, w.wantSync = true, true
	w.down(err)
	if w.c.opts.clearOnLoss {
		w.newEpoch()
		w.clear(err)
		return
	}
	w.recheckAll()
}

// recheckAll starts an epoch in which every node of the view is checked
// again and every listing read again, from the root down: an entry's reads
// wait until its parent's listing in the epoch shows it (open). The events
// are the difference between the view and what the reads find.
func (w *worker) recheckAll() {
	w.newEpoch()
	w.walk(w.root, func(e *entry) {
		for _, o := range e.ops() {
			w.unhook(o)
		}
		w.markDirty(&e.data, modeCheck)
		w.track(&e.data)
		if e.listable && (e.hasNode || e.list().Czxid != 0) {
			w.markDirty(&e.listing, modeGet)
			w.track(&e.listing)
		}
	})
	for _, o := range w.root.ops() {
		w.schedule(o)
	}
}

// newEpoch starts an epoch of the view: the answers of reads sent before
// are dropped when they come, and nothing waits to be read.
func (w *worker) newEpoch() {
	w.epoch++
	for _, o := range w.queue {
		o.queued = false
	}
	w.queue = nil
	for _, o := range w.parked {
		o.parked = false
	}
	w.parked = nil
}

// clear empties the view after a lost session (WithClearOnSessionLoss),
// or to start over (history.go): Deleted for every node, children first,
// each with why as its Err. Every entry but the root's is forgotten (a
// read of one still in flight is dropped when it comes); the root is read
// again as on the first load, and so is everything found under it.
func (w *worker) clear(why error) {
	w.clearing = why
	defer func() { w.clearing = nil }()
	e := w.root
	w.unpublishTree(e)
	w.dropKids(e)
	for _, o := range e.ops() {
		w.unhook(o)
	}
	e.dropNode()
	w.markDirty(&e.data, modeGet)
	w.track(&e.data)
	if e.listable {
		w.markDirty(&e.listing, modeGet)
		w.track(&e.listing)
	}
	for _, o := range e.ops() {
		w.schedule(o)
	}
}

// clientGone stops the cache's work: the client was closed, or (with
// WithRecursiveWatch) the server takes no persistent watch. A trust
// period ends with it (down); a view that was not trusted — never yet,
// or no longer — is told too, with an Untrusted of its own: no trust
// will come, and a listener waiting for it (a group's, a discovery
// cache's) hears that from nothing else. c.mu is held.
func (w *worker) clientGone(err error) {
	c := w.c
	if c.clientErr != nil {
		return
	}
	c.clientErr = err
	wasTrusted := c.trusted
	w.down(err)
	if !wasTrusted {
		c.lastErr = err
		w.emit(Event{Type: Untrusted, Err: err})
	}
	close(c.gone)
	for _, chs := range [][]chan error{w.syncWaiting, w.syncRiding, w.roundWaiters} {
		for _, ch := range chs {
			ch <- err
		}
	}
	w.syncWaiting, w.syncRiding, w.roundWaiters = nil, nil, nil
}

func (w *worker) maybeTrust() {
	c := w.c
	if c.trusted || !c.initialized || !w.connUp || w.needSync || w.syncedGen != w.connGen ||
		w.rec && w.watchGen != w.connGen ||
		w.round > 0 || c.clientErr != nil || w.sess == nil || w.sess.Err() != nil {
		return
	}
	c.trusted = true
	c.done = make(chan struct{})
	close(c.began)
	w.emit(Event{Type: Trusted})
	w.observe(true, nil)
}

func (w *worker) untrust(err error) {
	c := w.c
	if !c.trusted {
		return
	}
	if w.sess != nil && w.sess.Err() != nil {
		err = w.sess.Err()
	}
	c.trusted = false
	close(c.done)
	c.done = chanx.Closed
	c.began = make(chan struct{})
	c.lastErr = err
	w.emit(Event{Type: Untrusted, Err: err})
	w.observe(false, err)
}

// observe tells the client's observer of a change of the view's trust.
func (w *worker) observe(trusted bool, cause error) {
	if o := connx.Of(w.c.client).Observer(); o != nil && o.View != nil {
		o.View(connection.ViewChange{Recipe: "cache", Path: w.c.root, Trusted: trusted, Cause: cause})
	}
}

// listening reports whether the cache has listeners: events of nodes
// are built only then (a path and a Node each). c.mu is held.
func (w *worker) listening() bool { return len(w.c.listeners) > 0 }

// emit hands ev to every listener; c.mu is held.
func (w *worker) emit(ev Event) {
	for l := range w.c.listeners {
		l.push(ev)
	}
}
