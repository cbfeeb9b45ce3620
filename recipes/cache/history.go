package cache

import (
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// A replaced database: the view starts over.
//
// A view compares what it reads with what it holds (czxid, mzxid, pzxid)
// so that it never goes back in time. That rests on one history: the
// servers' database restored from an older backup, or emptied, hands out
// nodes older than the view's, and a view that took them for late answers
// would keep, trusted, data that no longer exist — or read a listing again
// for ever. Three things tell the view that the history changed:
//
//   - The client: a new session whose servers are behind the newest zxid
//     the client heard has the next Session.History. The view learns it
//     from the first sync answered in the session, before any of its
//     reads there.
//   - The view itself, when the zxids go forward but the data go back (a
//     restore whose servers elected a leader in a later epoch). A read
//     older than the view can be a late answer: the reads' goroutines hand
//     answers over in any order, and a node's data and its listing are
//     two reads. So the op is read again, and the view notes what it held
//     (its floor). That read was sent after the view's state was answered,
//     in a session that, in one history, sees nothing older than any
//     answer the client had (ZooKeeper serves a session no older state
//     than it has seen; a new session's reads wait for a sync): a node's
//     czxid or mzxid, a listing's pzxid, never go back. An answer below
//     the floor proves a new history.
//   - The view itself, when the zxids meet the old ones (a database
//     rebuilt with as many writes, servers restored across an election):
//     a zxid the view holds read with other contents (otherHistory).
//
// Starting over is WithClearOnSessionLoss's emptying: Deleted for every
// node (their Err wraps connection.ErrNewHistory), then a full load
// (Created for every node) and Trusted. The view is never
// trusted meanwhile: a new history comes with a new session, whose loss
// already ended the trust period; one found while trusted ends it first.

// otherHistory reports whether stat, read by o, names a state the view
// holds — the node's czxid, its mzxid, its listing's pzxid — with other
// contents. In one history a zxid names one change, made at one moment
// (the transaction's time, the same on every server): a node created at
// a czxid has one ctime and owner, a version written at an mzxid one
// mtime, version and length, a listing at a pzxid one cversion and count.
// A database rebuilt with the same writes, or restored across an election
// (the restored servers elect a leader in an epoch the old history used),
// hands out the zxids the view holds for other changes.
func (w *worker) otherHistory(o *op, stat *zk.Stat) bool {
	e := o.e
	if stat == nil {
		return false
	}
	if e.hasNode && stat.Czxid == e.czxid {
		if stat.Ctime != e.ctime || stat.EphemeralOwner != e.owner {
			return true
		}
		if stat.Mzxid == e.mzxid && (stat.Mtime != e.mtime || stat.Version != e.version || stat.DataLength != e.dataLength) {
			return true
		}
	}
	if o.kind() == listOp {
		ls := e.list()
		return ls.Czxid != 0 && ls.Czxid == stat.Czxid && ls.Pzxid == stat.Pzxid &&
			(ls.Cversion != stat.Cversion || ls.NumChildren != stat.NumChildren)
	}
	return false
}

// readOtherHistory starts the view over after o read stat, a state the
// view holds with other contents.
func (w *worker) readOtherHistory(o *op, stat *zk.Stat) {
	w.startOver(errtext.Errorf("cache: %s: %w: %s read at zxids the view holds with other contents (czxid %#x, mzxid %#x, pzxid %#x; ctime %d, mtime %d, the view's %d, %d)",
		w.c.root, connection.ErrNewHistory, o.e.path(), stat.Czxid, stat.Mzxid, stat.Pzxid, stat.Ctime, stat.Mtime, o.e.ctime, o.e.mtime))
}

// floor is what a read of an op sent from now on cannot be older than in
// the view's history: the view's node (czxid, and its mzxid for a data
// op) or listing (czxid, and its pzxid for a listing op) when an older
// answer came.
type floor struct {
	czxid, mzxid, pzxid int64
}

// older handles a read of o that came back older than the view: o is read
// again, its floor noted.
func (w *worker) older(o *op) {
	e := o.e
	var f floor
	if e.hasNode {
		f.czxid = e.czxid
	}
	ls := e.list()
	f.czxid = max(f.czxid, ls.Czxid)
	switch {
	case o.kind() == dataOp && e.hasNode && f.czxid == e.czxid:
		f.mzxid = e.mzxid
	case o.kind() == listOp && f.czxid == ls.Czxid:
		f.pzxid = ls.Pzxid
	}
	if w.floors == nil {
		w.floors = map[*op]floor{}
	}
	w.floors[o] = f
	w.markDirty(o, modeGet)
}

// belowFloor reports whether stat, read by o after an older answer, is
// older than what the view held then: a new history.
func (w *worker) belowFloor(o *op, stat *zk.Stat) bool {
	f, ok := w.floors[o]
	if !ok || stat == nil {
		return false
	}
	if o.kind() == dataOp {
		return stat.Czxid < f.czxid || stat.Czxid == f.czxid && stat.Mzxid < f.mzxid
	}
	return stat.Czxid < f.czxid || stat.Czxid == f.czxid && stat.Pzxid < f.pzxid
}

// readBelowFloor starts the view over after o read stat, below its floor.
func (w *worker) readBelowFloor(o *op, stat *zk.Stat) {
	f := w.floors[o]
	what := "data"
	if o.kind() == listOp {
		what = "listing"
	}
	w.startOver(errtext.Errorf("cache: %s: %w: %s of %s read older than the view's (czxid %#x, mzxid %#x, pzxid %#x; the view's %#x, %#x, %#x)",
		w.c.root, connection.ErrNewHistory, what, o.e.path(), stat.Czxid, stat.Mzxid, stat.Pzxid, f.czxid, f.mzxid, f.pzxid))
}

// sessionHistory is told of s, the view's session from now on (its first
// sync answered): a session of another history starts the view over.
func (w *worker) sessionHistory(s *connection.Session) {
	h := s.History()
	if h == w.history {
		return
	}
	old := w.history
	w.history = h
	if old < 0 {
		return // the view's first session: it has read nothing yet
	}
	w.startOver(errtext.Errorf("cache: %s: %w (history %d, then %d)", w.c.root, connection.ErrNewHistory, old, h))
}

// startOver empties the view and loads it again: nothing the view held
// can be compared with what the servers hold now. Reads in flight are of
// the old view: a new epoch drops their answers. (The load needs no sync
// of its own: it is read in the session that found the new history, after
// that session's first sync.)
func (w *worker) startOver(err error) {
	if w.c.published > 0 {
		// A view that shows nothing yet (its first load not in) starts
		// over silently: nothing it said is taken back.
		connx.Of(w.client).Logger().Warn("cache: the servers' database was replaced; the view starts over", "path", w.c.root, "error", err)
		w.c.lastErr = err
	}
	w.untrust(err)
	w.floors = nil
	w.newEpoch()
	w.clear(err)
}
