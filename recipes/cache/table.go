package cache

import (
	"math/bits"
	"sync"
)

// The cache's entries are its sink's watch table (connection.WatchTable):
// the client keeps no entry, and no path, per node for the watches that
// bulk reads set. An entry's watched bits say which of its node's sink
// watches are pending on the server (set and not fired) in the handle the
// client last marked; the client asks the table which an event fires,
// which to register again after a reconnect, how many to count, which to
// end with the session. That is the server's view, not the cache's: a
// watch the cache no longer waits on (o.own unset) stays pending here
// until it fires, as the server keeps it.
//
// The client calls the table with its watch lock held, from go-zookeeper's
// receive loop among others, so the table cannot take the cache's mu
// (held while the worker calls the client). Its own lock, mu, guards the
// watched bits, the orphans, and the shape of the tree the table walks:
// the worker changes an entry's children, and marks one removed, only
// while it holds mu, and calls nothing while it does.
type watchTable struct {
	mu   sync.Mutex
	root *entry
	// orphans holds the pending watches of removed entries, by path, until
	// they fire (a removed node's deletion usually fired them already) or
	// an entry at the path takes them.
	orphans map[string]uint8
	n       int // nodes and kinds pending
}

// find returns the live entry at p, or nil; t.mu is held.
func (t *watchTable) find(p string) *entry {
	if t.root == nil {
		return nil
	}
	e := lookupIn(t.root, p)
	if e == nil || e.removed {
		return nil
	}
	return e
}

func (t *watchTable) MarkWatches(path string, kinds uint8) {
	t.mu.Lock()
	defer t.mu.Unlock()
	had := t.orphans[path]
	if e := t.find(path); e != nil {
		t.n += bits.OnesCount8(kinds &^ (e.watched | had))
		e.watched |= kinds | had
		if had != 0 {
			t.dropOrphan(path)
		}
		return
	}
	t.n += bits.OnesCount8(kinds &^ had)
	if t.orphans == nil {
		t.orphans = map[string]uint8{}
	}
	t.orphans[path] = had | kinds
}

func (t *watchTable) TakeWatches(path string, kinds uint8) uint8 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var got uint8
	if e := t.find(path); e != nil {
		got = e.watched & kinds
		e.watched &^= kinds
	}
	if had, ok := t.orphans[path]; ok {
		got |= had & kinds
		if rest := had &^ kinds; rest != 0 {
			t.orphans[path] = rest
		} else {
			t.dropOrphan(path)
		}
	}
	t.n -= bits.OnesCount8(got)
	return got
}

func (t *watchTable) RangeWatches(f func(path string, kinds uint8)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var walk func(e *entry, path string)
	walk = func(e *entry, path string) {
		if e.watched != 0 {
			f(path, e.watched)
		}
		for _, k := range e.children() {
			walk(k, join(path, k.name))
		}
	}
	if t.root != nil {
		walk(t.root, t.root.name)
	}
	for p, k := range t.orphans {
		f(p, k)
	}
}

func (t *watchTable) CountWatches() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

func (t *watchTable) ClearWatches() {
	t.mu.Lock()
	defer t.mu.Unlock()
	var walk func(e *entry)
	walk = func(e *entry) {
		e.watched = 0
		for _, k := range e.children() {
			walk(k)
		}
	}
	if t.root != nil {
		walk(t.root)
	}
	t.orphans, t.n = nil, 0
}

// dropOrphan forgets the orphan at p; a map keeps the table it grew to,
// so an empty one goes.
func (t *watchTable) dropOrphan(p string) {
	delete(t.orphans, p)
	if len(t.orphans) == 0 {
		t.orphans = nil
	}
}

// orphan moves e's pending watches to the orphans: e is being removed.
// t.mu is held.
func (t *watchTable) orphan(e *entry) {
	if e.watched == 0 {
		return
	}
	if t.orphans == nil {
		t.orphans = map[string]uint8{}
	}
	p := e.path()
	t.orphans[p] |= e.watched
	e.watched = 0
}

// lookupIn returns the entry of the node at path p under root, or nil.
func lookupIn(root *entry, p string) *entry {
	e, _ := resolve(root.name, p, root, func(e *entry, name string) (*entry, bool) {
		k := e.kid(name)
		return k, k != nil
	})
	return e
}
