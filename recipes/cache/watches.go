package cache

import (
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// fired is a watch that fired, from the connection's hook.
type fired struct {
	o  *op
	w  *connection.Watch
	ev zk.Event
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

// setWatch makes wch o's pending watch.
func (w *worker) setWatch(o *op, wch *connection.Watch) {
	if wch == nil || o.w == wch {
		return
	}
	w.unhook(o)
	o.w = wch
	w.c.watches.Add(1)
	wch.AddHook(o)
}

// WatchFired passes o's fired watch to the worker (a connection.Hook: a
// hook costs the watch no allocation, and a cache has two per node). It
// runs on go-zookeeper's receive loop and never blocks.
func (o *op) WatchFired(wch *connection.Watch, ev zk.Event) {
	o.e.in.push(fired{o, wch, ev})
}

// unhook forgets o's pending watch: it stays on the server until it
// fires, but no longer concerns the cache.
func (w *worker) unhook(o *op) {
	if o.w == nil {
		return
	}
	o.w.RemoveHook(o)
	o.w = nil
	w.c.watches.Add(-1)
}

// drain turns fired watches into dirty ops.
func (w *worker) drain() {
	for _, f := range w.c.inbox.take() {
		o := f.o
		if o.w != f.w {
			continue // a watch the op no longer waits on
		}
		o.w = nil
		w.c.watches.Add(-1)
		if o.e.removed {
			continue
		}
		mode := modeGet
		if f.ev.Type == zk.EventNotWatching {
			// Its session ended: the node is checked in the next one.
			w.checkSession()
			mode = modeCheck
		}
		w.markDirty(o, mode)
		w.schedule(o)
	}
}
