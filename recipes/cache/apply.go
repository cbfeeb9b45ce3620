package cache

import (
	"errors"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// This file turns read results into the view and its events. c.mu is
// held throughout. The rules that keep the view consistent:
//
//   - A read never takes the view back in time: data older than the node
//     held (by czxid, then mzxid) and listings older than the last one (by
//     czxid, then pzxid) are read again (older, history.go).
//   - A node is published (Created) only once its parent is, and a
//     parent unpublished (Deleted) only after its children: a listener
//     building a tree from the events never sees an orphan.
//   - A node whose czxid changed is another node at the same path: the old
//     one and everything under it were deleted (Deleted), the new one is
//     Created and listed afresh.

func (w *worker) result(r *result) {
	if r.op == nil {
		if r.addWatch {
			w.watchDone(r)
		} else {
			w.syncDone(r)
		}
		return
	}
	if !r.sub {
		w.inflight--
	}
	o := r.op
	o.inflight = false
	w.checkSession() // a read that ran in a later session must not count
	switch {
	case w.c.clientErr != nil:
		// The client was closed (clientGone): its Untrusted was the last
		// event, and the view stays as it was, so an answer that came
		// before the closure is not applied.
		return
	case o.e.removed:
		w.settle(o, r.seq)
		return
	case r.epoch != w.epoch:
		// Sent before the session was lost: the answer says nothing
		// certain of the new session.
		w.stale(o)
		return
	}
	if r.err == nil {
		w.retryDelay = minRetryDelay
		if o.kind() == listOp || r.mode != modeCheck || r.exists {
			switch {
			case w.belowFloor(o, r.stat):
				w.readBelowFloor(o, r.stat)
				w.stale(o)
				return
			case w.otherHistory(o, r.stat):
				w.readOtherHistory(o, r.stat)
				w.stale(o)
				return
			}
		}
	}
	if o.kind() == dataOp {
		w.dataDone(o, r)
	} else {
		w.listDone(o, r)
	}
}

// stale settles o after a read of it sent in an earlier session came
// back. lost marked o dirty, unless it was the listing of a node not read
// yet; if a read in this session has read the node since, it left the
// listing to this read (setNode lists a node only when no listing of it
// is in flight): it is marked now, or it would never be read.
func (w *worker) stale(o *op) {
	e := o.e
	if o.kind() == listOp && !o.dirty && !e.removed && e.listable && (e.hasNode || e.list().Czxid != 0) {
		w.markDirty(o, modeGet)
		if e.data.tracked || o.tracked {
			w.track(o)
		}
	}
	w.settle(o, 0)
}

// unreadable reports whether err means the node cannot be read by this
// client at all: no permission, or more than the client's buffer.
func unreadable(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, connection.ErrResponseTooLarge)
}

func (w *worker) dataDone(o *op, r *result) {
	e := o.e
	w.setWatch(o, r.watch, r.watched)
	seq := r.seq // 0 while o needs another read to settle
	switch {
	case errors.Is(r.err, zk.ErrNoNode), r.err == nil && r.mode == modeCheck && !r.exists:
		// With a check, the watch is now a creation watch: the root's is
		// what waits for it to come back (the recursive watch's, with
		// WithRecursiveWatch).
		w.gone(e, r.mode == modeCheck || w.rec)
		if e.removed {
			return
		}
		if r.mode != modeCheck && !w.rec {
			seq = 0 // the root's creation watch is still to set
		}
	case unreadable(r.err):
		e.setDataErr(r.err)
		if checked := e.checked(); r.mode == modeFetch && checked != nil {
			if !w.setNode(o, e, nil, checked) {
				seq = 0
			}
		} else {
			w.markDirty(o, modeCheck) // its Stat, and a watch, from exists
			seq = 0
		}
	case r.err != nil:
		w.failed(o, r)
		return
	case r.mode == modeCheck:
		if e.hasNode && e.czxid == r.stat.Czxid && e.mzxid == r.stat.Mzxid {
			w.touch(e, r.stat)
			break
		}
		// Moved (or never read): fetch the data; the check's watch stands.
		e.setChecked(r.stat)
		w.start(o, modeFetch)
		return
	default:
		e.setDataErr(nil)
		e.setChecked(nil)
		if !w.setNode(o, e, r.data, r.stat) {
			seq = 0
		}
	}
	w.settle(o, seq)
}

func (w *worker) listDone(o *op, r *result) {
	e := o.e
	w.setWatch(o, r.watch, r.watched)
	switch {
	case errors.Is(r.err, zk.ErrNoNode):
		if e.parent != nil {
			w.vanish(e)
			return
		}
		// The root: its data op decides, and waits for it to come back.
		// But a data read that found it may have been applied first (the
		// answers come in order, the reads' goroutines hand them over in
		// any), and setNode did not list it, this listing being in
		// flight: list it now, or its children are never read.
		if e.hasNode {
			w.markDirty(o, modeGet)
			if e.data.parked {
				// Its read failed and waits for the retry timer:
				// so does this one, rather than read in a loop.
				w.park(o)
			}
			w.settle(o, 0)
			return
		}
	case unreadable(r.err):
		e.setListErr(r.err)
		w.openKids(e)
		w.refresh(e, e.list())
	case r.err != nil:
		w.failed(o, r)
		return
	case e.hasNode && r.stat.Czxid < e.czxid,
		r.stat.Czxid < e.list().Czxid,
		e.list().Czxid == r.stat.Czxid && r.stat.Pzxid < e.list().Pzxid:
		// Older than the view, or than the last listing (a node not read
		// yet has no Stat to compare with): list again; a listing that
		// is older still proves a new history (history.go).
		w.older(o)
		w.settle(o, 0)
		return
	case e.hasNode && r.stat.Czxid > e.czxid:
		// A newer node at the path. Its data read drops the old node's
		// children and lists the new one's (setNode).
		w.markDirty(&e.data, modeGet)
		if o.tracked {
			w.track(&e.data)
		}
		w.schedule(&e.data)
	default:
		w.applyListing(o, e, r.children, r.stat)
	}
	w.settle(o, r.seq)
}

// applyListing makes e's children the listing's: new names become entries
// (their reads tracked with the listing's, so a load includes them), names
// gone are deleted with their subtrees.
func (w *worker) applyListing(o *op, e *entry, names []string, stat *zk.Stat) {
	ls := listOf(stat)
	if cur := e.list(); cur.Czxid != 0 && cur.Czxid != ls.Czxid {
		// The children are of an older node at the path (e not read
		// yet, or read as that node): a child of the same name is
		// another node, not to be kept, or its read of the old node
		// would be published under the new one.
		for _, k := range e.children() {
			w.unpublishTree(k)
			w.remove(k)
		}
		w.c.table.mu.Lock()
		e.setChildren(nil)
		w.c.table.mu.Unlock()
	}
	newer := e.hasNode && ls.Czxid == e.czxid && ls.Pzxid > e.pzxid
	hadErr := e.listErr() != nil
	if !hadErr && !newer {
		e.setList(ls)
	}
	e.setListErr(nil)
	accept, descend := w.c.opts.selector.Accept, w.c.opts.selector.Descend
	depth := e.depth() + 1
	dir := "" // e's path, when the selector needs its children's
	if accept != nil || descend != nil {
		dir = e.path()
	}
	// The listing and the children, both sorted, side by side.
	slices.Sort(names) // the listing's order means nothing
	kids := e.children()
	matched := make([]bool, len(kids))
	var added []*entry
	i := 0
	for j, name := range names {
		if j > 0 && name == names[j-1] {
			continue
		}
		for i < len(kids) && kids[i].name < name {
			i++
		}
		if i < len(kids) && kids[i].name == name {
			k := kids[i]
			matched[i] = true
			i++
			if k.seen != w.epoch {
				// After a lost session, or held back by awaitParent: its
				// reads may go now.
				k.seen = w.epoch
				for _, ko := range k.ops() {
					if ko.dirty && o.tracked {
						w.track(ko)
					}
					w.schedule(ko)
				}
			}
			continue
		}
		p := ""
		if dir != "" {
			p = join(dir, name)
		}
		if accept != nil && !accept(p) {
			continue
		}
		k := w.newEntry(e, name, p, depth)
		added = append(added, k)
		for _, ko := range k.ops() {
			if ko.dirty {
				if o.tracked {
					w.track(ko)
				}
				w.schedule(ko)
			}
		}
	}
	gone := false
	for i, k := range kids {
		if !matched[i] {
			w.unpublishTree(k)
			w.remove(k)
			gone = true
		}
	}
	if gone || len(added) > 0 {
		t := &w.c.table
		t.mu.Lock() // the slice is changed in place
		if gone {
			kids = slices.DeleteFunc(kids, func(k *entry) bool { return k.removed })
		}
		if len(added) > 0 {
			kids = append(kids, added...)
			slices.SortFunc(kids, byName)
		}
		e.setChildren(kids)
		t.mu.Unlock()
	}
	if hadErr || newer {
		w.refresh(e, ls) // the node's child fields the listing's, and its Err
		e.setList(ls)
	}
}

// setNode applies a data read of e, or reports false when the read must
// wait for a listing of e's parent (awaitParent).
func (w *worker) setNode(o *op, e *entry, data []byte, stat *zk.Stat) bool {
	if !e.hasNode && e.list().Czxid > stat.Czxid {
		// Older than the listing applied (its answer came after the
		// listing's, the reads' goroutines hand them over in any order):
		// the node was deleted and made again since. Read it again:
		// published now, it would bring the new node's children under
		// the old one, then Deleted with it and Created again.
		w.older(o)
		return false
	}
	if p := e.parent; p != nil && p.listErr() == nil && p.list().Pzxid < stat.Czxid &&
		(!e.hasNode || stat.Czxid > e.czxid) {
		w.awaitParent(o, e)
		return false
	}
	switch {
	case !e.hasNode:
		if ls := e.list(); ls.Czxid != 0 && ls.Czxid < stat.Czxid {
			// Children listed from an older node at the path: never
			// published (their parent was not), so gone without events.
			w.dropKids(e)
		}
		w.putNode(e, data, stat)
		w.publish(e)
	case stat.Czxid < e.czxid, stat.Czxid == e.czxid && stat.Mzxid < e.mzxid:
		// Older than the view: read again; older still proves a new
		// history (history.go).
		w.older(o)
		return false
	case stat.Czxid > e.czxid:
		// Deleted and created again since the last read: the old node
		// and everything under it are gone.
		w.unpublishTree(e)
		w.dropKids(e)
		w.unhook(&e.listing) // it watched the old node
		e.setList(listStat{})
		e.setListErr(nil)
		w.putNode(e, data, stat)
		w.publish(e)
	default:
		changed := e.published && (stat.Mzxid != e.mzxid || errText(e.err()) != errText(e.nodeErr()))
		var path string
		var old Node
		if changed && w.listening() {
			path = e.path()
			old = e.node(path)
		}
		w.putNode(e, data, stat)
		if path != "" {
			w.emit(Event{Type: Changed, Path: path, Node: e.node(path), Old: old})
		}
	}
	if e.listable && e.list().Czxid != stat.Czxid && !e.listing.inflight {
		// Never listed, or listed as another node: list this one.
		w.markDirty(&e.listing, modeGet)
		if o.tracked {
			w.track(&e.listing)
		}
		w.schedule(&e.listing)
	}
	return true
}

// putNode makes data and stat e's node, with the Err e's reads found.
func (w *worker) putNode(e *entry, data []byte, stat *zk.Stat) {
	e.bytes = data
	e.putStat(stat)
	e.setNodeErr(e.err())
}

// awaitParent holds back a node made after its parent's last listing: a
// new node at a known path (or a first read finding a newer node than the
// listing that showed the path). It may be the child of another node at
// the parent's path — the parent deleted and made again with it, whose
// read has not come yet — and published now it would be Created under the
// old parent, Deleted with it, and Created again. So e waits, closed,
// until a listing of its parent shows it (applyListing opens it and reads
// it again); a new parent drops it with the old one's children.
func (w *worker) awaitParent(o *op, e *entry) {
	e.seen = -1 // never an epoch: closed (open)
	w.markDirty(o, modeGet)
	p := &e.parent.listing
	w.markDirty(p, modeGet)
	if o.tracked {
		w.track(p)
	}
	w.schedule(p)
}

// touch applies a check that found e unchanged: only the child fields of
// its Stat may have moved, silently.
func (w *worker) touch(e *entry, stat *zk.Stat) {
	e.putStat(stat)
}

// refresh applies listing ls of e to its node: its Err (an event if it
// changed) and its child fields (silently, when ls is of the same node and
// newer).
func (w *worker) refresh(e *entry, ls listStat) {
	if !e.hasNode {
		return
	}
	err := e.err()
	changed := e.published && errText(err) != errText(e.nodeErr())
	var path string
	var old Node
	if changed && w.listening() {
		path = e.path()
		old = e.node(path)
	}
	e.mergeList(ls)
	e.setNodeErr(err)
	if path != "" {
		w.emit(Event{Type: Changed, Path: path, Node: e.node(path), Old: old})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// gone handles the news that e's node does not exist. checked says the
// read was an exists, whose watch now waits for the node's creation.
func (w *worker) gone(e *entry, checked bool) {
	if p := e.parent; p != nil {
		if p.listErr() != nil {
			w.vanish(e) // no listing to ask
			return
		}
		// Not vanished yet: a read that found no node may be older than
		// the parent's last listing, which already shows the node made
		// again (its answer came first); vanished now, it would never be
		// read again. The parent's listing decides: absent, it vanishes
		// (applyListing); there, it is read again (awaitParent).
		w.awaitParent(&e.data, e)
		return
	}
	// The root empties; an exists waits for it to come back.
	w.unpublishTree(e)
	w.dropKids(e)
	e.dropNode()
	w.clearOp(&e.listing)
	if !checked {
		w.markDirty(&e.data, modeCheck)
	}
}

// vanish deletes e and its subtree from the view (children first) and
// forgets them.
func (w *worker) vanish(e *entry) {
	w.unpublishTree(e)
	w.remove(e)
	if p := e.parent; p != nil {
		kids := p.children()
		if i, ok := slices.BinarySearchFunc(kids, e.name, cmpName); ok && kids[i] == e {
			w.c.table.mu.Lock()
			p.setChildren(slices.Delete(kids, i, i+1))
			w.c.table.mu.Unlock()
		}
	}
}

// dropKids forgets e's children, which must not be published.
func (w *worker) dropKids(e *entry) {
	for _, k := range e.children() {
		w.remove(k)
	}
	w.c.table.mu.Lock()
	e.setChildren(nil)
	w.c.table.mu.Unlock()
}

// remove forgets e and its subtree: no more reads, no more watches. Its
// parent's children still name it: the caller takes it out (vanish), or
// all of them (dropKids, applyListing).
func (w *worker) remove(e *entry) {
	w.dropKids(e)
	t := &w.c.table
	t.mu.Lock()
	e.removed = true
	t.orphan(e)
	t.mu.Unlock()
	for _, o := range e.ops() {
		w.clearOp(o)
	}
}

// clearOp forgets o's watch and any read it needs.
func (w *worker) clearOp(o *op) {
	delete(w.floors, o)
	w.unhook(o)
	w.untrack(o)
	o.dirty = false
	if !o.inflight {
		w.unpend(o)
	}
}

// publish puts e's node in the view (Created) if its parent is there, and
// then its children that were waiting for it.
func (w *worker) publish(e *entry) {
	if e.published || !e.hasNode || e.removed || e.parent != nil && !e.parent.published {
		return
	}
	e.published = true
	w.c.published++
	if w.listening() {
		path := e.path()
		w.emit(Event{Type: Created, Path: path, Node: e.node(path)})
	}
	for _, k := range e.children() {
		w.publish(k)
	}
}

// unpublishTree takes e and its subtree out of the view, children first
// (Deleted each).
func (w *worker) unpublishTree(e *entry) {
	for _, k := range e.children() {
		w.unpublishTree(k)
	}
	if !e.published {
		return
	}
	e.published = false
	w.c.published--
	if w.listening() {
		path := e.path()
		w.emit(Event{Type: Deleted, Path: path, Node: e.node(path), Err: w.clearing})
	}
}

// openKids lets e's children be read in this session without a listing
// that shows them (e cannot be listed).
func (w *worker) openKids(e *entry) {
	for _, k := range e.children() {
		if k.seen != w.epoch {
			k.seen = w.epoch
			for _, ko := range k.ops() {
				w.schedule(ko)
			}
		}
	}
}

// failed handles a read that failed for another reason than the node: the
// client's retry policy gave up (a long outage), or the session ended.
func (w *worker) failed(o *op, r *result) {
	switch {
	case w.c.ctx.Err() != nil:
		return // closing
	case errors.Is(r.err, connection.ErrClosed):
		w.clientGone(r.err)
		return
	}
	w.checkSession()
	if r.epoch != w.epoch {
		w.stale(o)
		return
	}
	mode := r.mode
	if mode == modeFetch {
		mode = modeCheck // the check's watch may be gone with the failure
	}
	w.markDirty(o, mode)
	connx.Of(w.client).Logger().Debug("cache: read failed, will retry", "path", w.c.root, "child", o.e.path(), "error", r.err)
	w.park(o)
}

// syncDone handles the answer to a sync: the barrier after a reconnect,
// the first step in a new session, or what Sync's callers wait on.
func (w *worker) syncDone(r *result) {
	w.syncInflight = false
	again := func() {
		w.wantSync = true
		w.syncWaiting = append(w.syncRiding, w.syncWaiting...)
		w.syncRiding = nil
	}
	switch {
	case w.c.ctx.Err() != nil:
		return
	case errors.Is(r.err, connection.ErrClosed):
		w.clientGone(r.err)
		return
	case r.err != nil:
		connx.Of(w.client).Logger().Debug("cache: sync failed, will retry", "path", w.c.root, "error", r.err)
		again()
		w.syncParked = true
		w.armRetry()
		return
	}
	w.retryDelay = minRetryDelay
	w.checkSession()
	switch s := r.sess; {
	case s.Err() != nil:
		again() // it may have run in the next session, before anything was known of it
		return
	case w.sess == nil:
		w.sess = s // the view's session from now on
		w.sessionHistory(s)
	case w.sess != s:
		again()
		return
	}
	w.needSync = false
	// Every notification the server sent before the sync's answer has
	// been drained (run drains before each result): what is pending now
	// is all the view lacks of the state at the sync.
	w.barrier()
	if !w.connUp || r.gen != w.connGen || !r.up {
		// Sent while the connection was down, or on an earlier one: it
		// may have been written on the new connection before the
		// watches were registered again, and answered before the
		// notifications of the changes made while cut off. Neither trust
		// nor a Sync caller may rest on it; one sent after Reconnected
		// will (state asks for it).
		w.syncWaiting = append(w.syncRiding, w.syncWaiting...)
		w.syncRiding = nil
		w.wantSync = w.connUp
		return
	}
	w.syncedGen = r.gen
	w.roundWaiters = append(w.roundWaiters, w.syncRiding...)
	w.syncRiding = nil
}
