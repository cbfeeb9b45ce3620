package cache

import (
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// fired is a watch that fired: an op's Watch, from its hook, or a watch
// of the cache's sink (o nil), from the sink.
type fired struct {
	o    *op
	w    *connection.Watch
	path string // the sink's: the node
	ev   zk.Event
	// recursive: a notification of the recursive watch
	// (WithRecursiveWatch), o nil.
	recursive bool
}

// inbox takes fired watches from the connection's hooks, which run on
// go-zookeeper's receive loop and must never block, to the worker.
type inbox struct {
	mu    sync.Mutex
	items []fired
	wake  chan struct{} // capacity 1
}

func (in *inbox) push(f fired) {
	in.mu.Lock()
	in.items = append(in.items, f)
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *inbox) take() []fired {
	in.mu.Lock()
	defer in.mu.Unlock()
	items := in.items
	in.items = nil
	return items
}

// setWatch makes wch o's pending watch, or with own the watch a bulk
// read set through the cache's sink.
//
// A sink's watch is the client's entry for the node, not an object of its
// own: its event names the node (drain finds the op), and it is told for
// any watch of the node's kind, of whichever read. The op tells the ones
// that concern it: while its sink watch is pending (own), or while a read
// is in flight (the read's watch may have fired before its answer is
// handled: drain runs first). A watch that fired meanwhile left the op
// dirty, so own is not set then — nor while the op is dirty for another
// reason: its next read sets a watch again, and an event that comes
// before can only repeat what that read will see.
func (w *worker) setWatch(o *op, wch *connection.Watch, own bool) {
	if own {
		if o.dirty {
			return
		}
		w.unhook(o)
		o.own = true
		w.c.watches.Add(1)
		return
	}
	if wch == nil || w.hooked[o] == wch {
		return
	}
	w.unhook(o)
	w.hooked[o] = wch
	w.hookedPeak = max(w.hookedPeak, len(w.hooked))
	w.c.watches.Add(1)
	connx.AddHook(wch, o)
}

// WatchFired passes o's fired watch to the worker (a connection.Hook: a
// hook costs the watch no allocation). It runs on go-zookeeper's receive
// loop and never blocks. The cache's inbox is found from its root entry
// (inboxes): an entry keeps no pointer to it, 8 bytes a node.
func (o *op) WatchFired(wch *connection.Watch, ev zk.Event) {
	r := o.e
	for r.parent != nil {
		r = r.parent
	}
	if in, ok := inboxes.Load(r); ok {
		in.(*inbox).push(fired{o: o, w: wch, ev: ev})
	}
}

// inboxes holds the inbox of every open cache, by its root entry.
var inboxes sync.Map

// unhook forgets o's pending watch: it stays on the server until it
// fires, but no longer concerns the cache.
func (w *worker) unhook(o *op) {
	if o.own {
		o.own = false
		w.c.watches.Add(-1)
	}
	wch := w.hooked[o]
	if wch == nil {
		return
	}
	connx.RemoveHook(wch, o)
	w.forget(o)
}

// forget drops o's Watch from the table.
func (w *worker) forget(o *op) {
	delete(w.hooked, o)
	w.c.watches.Add(-1)
	if len(w.hooked) == 0 && w.hookedPeak > 64 {
		w.hooked, w.hookedPeak = map[*op]*connection.Watch{}, 0 // let a big table go
	}
}

// drain turns fired watches into dirty ops.
func (w *worker) drain() {
	for _, f := range w.c.inbox.take() {
		if f.recursive {
			w.recursiveFired(f.ev)
			continue
		}
		if f.o == nil {
			w.sinkFired(f)
			continue
		}
		o := f.o
		if w.hooked[o] != f.w {
			continue // a watch the op no longer waits on
		}
		w.forget(o)
		w.fire(o, f.ev)
	}
}

// sinkFired handles an event of the cache's sink: the ops of its node
// that it concerns (see setWatch).
func (w *worker) sinkFired(f fired) {
	if f.ev.Type == zk.EventNotWatching {
		// A session's watches ended. If it is the view's, lost marks
		// every op (checkSession); if the view is in a later session
		// already, they are the old one's, ended late (the old handle
		// closes in the background, after the new session's bulk reads
		// may have set the same paths' watches again): the sink does not
		// say whose, and the ops' pending watches are the new session's.
		w.checkSession()
		return
	}
	e := w.lookup(f.path)
	if e == nil {
		return
	}
	var ops []*op
	switch f.ev.Type {
	case zk.EventNodeDataChanged:
		ops = []*op{&e.data}
	case zk.EventNodeChildrenChanged:
		ops = []*op{&e.listing}
	default: // deleted
		ops = []*op{&e.data, &e.listing}
	}
	for _, o := range ops {
		switch {
		case o.own:
			o.own = false
			w.c.watches.Add(-1)
		case !o.inflight:
			continue
		}
		w.fire(o, f.ev)
	}
}

// fire marks o dirty for an event of its watch.
func (w *worker) fire(o *op, ev zk.Event) {
	if o.e.removed {
		return
	}
	mode := modeGet
	if ev.Type == zk.EventNotWatching {
		// Its session ended: the node is checked in the next one.
		w.checkSession()
		mode = modeCheck
	}
	w.markDirty(o, mode)
	w.schedule(o)
}

// lookup returns the entry of the node at path p, or nil.
func (w *worker) lookup(p string) *entry { return lookupIn(w.root, p) }
