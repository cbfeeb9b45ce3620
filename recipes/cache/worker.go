package cache

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// The worker owns the cache's entries: one per node found, cached or not
// yet read. It alone reads and writes them, so they need no lock; it
// takes the cache's mu to change the view and the trust state, and while
// it handles anything that may.
//
// Each entry has two ops, its data and its listing. An op is dirty when
// it needs a read (its watch fired, it was never read, its session was
// lost), queued when it waits for a read slot, inflight while its read
// runs: one read per op at a time, so a node's reads, and the events they
// make, follow one another. A fired watch marks its op dirty; a read sets
// the op's next watch.
type worker struct {
	c      *Cache
	client *connection.Client
	root   *entry

	queue       []*op                     // ops waiting for a read slot, in order
	parked      []*op                     // ops whose read failed, until the retry timer or the connection is back
	pending     map[*op]readState         // ops dirty or in flight
	hooked      map[*op]*connection.Watch // the Watch each op waits on, set by a read of its own (watches.go)
	hookedPeak  int
	pendingPeak int          // the most pending since pending was made
	results     chan *result // capacity: every read and the sync in flight
	states      <-chan connection.State

	inflight int    // reads in flight, a bulk read counting one (not the sync)
	noBulk   bool   // the server takes no reads in bulk: one read per op
	seq      uint64 // numbers the reads
	epoch    int32  // sessions the view went through, and start-overs; results of another epoch are dropped
	sess     *connection.Session
	history  int           // the History of the sessions the view was read in (history.go)
	floors   map[*op]floor // ops read again after a read older than the view (history.go)
	clearing error         // while the view is emptied: what its Deleted events carry

	connUp    bool // the connection is up (Connected, Reconnected)
	connGen   int  // connection losses seen (Suspended, Lost)
	syncedGen int  // the connGen of the last sync answered while up: the barrier trust waits for
	needSync  bool // a new session: no read before a sync in it

	wantSync, syncInflight, syncParked bool
	syncWaiting                        []chan error // Sync callers waiting for the next sync
	syncRiding                         []chan error // Sync callers whose sync is in flight

	// The round: ops tracked until a read dispatched after the moment
	// they were tracked completes (the first load, a barrier). When no op
	// is tracked, the round is over: Initialized, Sync's callers, trust.
	round        int
	roundWaiters []chan error
	initPending  bool

	retryC     <-chan time.Time
	retryTimer *time.Timer
	retryDelay time.Duration
}

const (
	minRetryDelay = 50 * time.Millisecond
	maxRetryDelay = 2 * time.Second
)

type opKind uint8

const (
	dataOp opKind = iota // the node's data and Stat, and a data watch
	listOp               // the node's children, and a child watch
)

// readMode is how a data op reads.
type readMode uint8

const (
	modeGet   readMode = iota // GetWatch: data, Stat and a data watch
	modeCheck                 // ExistsWatch: Stat and a data watch (a creation watch if absent); a fetch follows if the node moved
	modeFetch                 // Get: the data after a check, whose watch stands
)

// An entry is kept for every node of the view, so its fields are ordered
// to pack, and what few nodes need is apart (entryRare; readState for the
// ops being read; the worker's table of Watches for the ops waiting on
// one, set by a read of their own — those of bulk reads are the sink's):
// 176 bytes with its two ops and the node's Stat, the Stat's fields laid
// out flat (a zk.Stat is 72 bytes, 4 of them padding). It keeps its name,
// not its path: a path is built when a read, an event or a snapshot needs
// it (path). The Node is built the same way (node).
type op struct {
	e *entry

	mode readMode // of the next read, while dirty
	own  bool     // a watch set by the cache's sink is pending (watches.go)

	dirty, queued, inflight, parked bool
	single                          bool // its next read goes alone: a bulk read of it failed

	tracked bool // counted in the round
}

// readState is what a pending op's reads need: kept in the worker's
// table of pending ops, not in the op (an op of each kind for every node).
type readState struct {
	need uint64 // a read numbered above it ends the tracking
	seq  uint64 // number of the read in flight
	bulk bool   // that read is a bulk read: its watch is set after its data is read
	// The tracking rests on a bulk read in flight: a watch it sets fires
	// for a change made between its data's read and its watch's setting,
	// before it completes, and then the next read ends the tracking.
	bulkWait bool
}

type entry struct {
	name   string // the last component of its path; the root's, its path
	parent *entry
	kids   *[]*entry  // its children, sorted by name (most nodes have none)
	rare   *entryRare // what few nodes need: nil when empty

	// The node as last read (hasNode): published, or held until the
	// parent is. Its Stat's child fields follow its listing (mergeList).
	bytes                                    []byte
	czxid, mzxid, ctime, mtime, owner, pzxid int64
	version, cversion, aversion, dataLength  int32
	numChildren                              int32

	seen int32 // the epoch in which the parent's listing last showed it

	hasNode   bool
	listed    bool // a listing was applied, and its Stat is the node's (list)
	listable  bool // its children are cached (depth and selector)
	published bool
	removed   bool  // written under the table's lock (table.go)
	watched   uint8 // the sink's watches pending on the server: the table's (table.go)

	data, listing op
}

// listStat is what the cache keeps of a listing's Stat: which node it
// listed and how recent it is (czxid, pzxid), and the child fields a
// node's Stat takes from it.
type listStat struct {
	Czxid, Pzxid          int64
	Cversion, NumChildren int32
}

func listOf(st *zk.Stat) listStat {
	return listStat{Czxid: st.Czxid, Pzxid: st.Pzxid, Cversion: st.Cversion, NumChildren: st.NumChildren}
}

// list returns the Stat of e's last listing applied; Czxid 0 for none.
// Most often it is the node's own child fields (listed), kept once;
// where they differ (a listing of another node at the path, or older than
// the node's data read) it is kept apart, in the entry's rare fields.
func (e *entry) list() listStat {
	switch {
	case e.rare != nil && e.rare.list != nil:
		return *e.rare.list
	case e.listed:
		return listStat{Czxid: e.czxid, Pzxid: e.pzxid, Cversion: e.cversion, NumChildren: e.numChildren}
	}
	return listStat{}
}

// setList records ls as the Stat of e's last listing (a zero ls: none).
func (e *entry) setList(ls listStat) {
	e.listed = ls != listStat{} && e.hasNode &&
		ls == listStat{Czxid: e.czxid, Pzxid: e.pzxid, Cversion: e.cversion, NumChildren: e.numChildren}
	if e.listed || ls == (listStat{}) {
		if e.rare != nil && e.rare.list != nil {
			e.rare.list = nil
			e.tidy()
		}
		return
	}
	e.rareFields().list = &ls
}

// stat returns the node's Stat.
func (e *entry) stat() zk.Stat {
	return zk.Stat{
		Czxid: e.czxid, Mzxid: e.mzxid, Ctime: e.ctime, Mtime: e.mtime,
		Version: e.version, Cversion: e.cversion, Aversion: e.aversion,
		EphemeralOwner: e.owner, DataLength: e.dataLength, NumChildren: e.numChildren, Pzxid: e.pzxid,
	}
}

// putStat makes st the node's Stat, its child fields the last listing's
// when that is of the same node and newer (mergeList), the listing's
// Stat kept as it was.
func (e *entry) putStat(st *zk.Stat) {
	ls := e.list()
	e.czxid, e.mzxid, e.ctime, e.mtime = st.Czxid, st.Mzxid, st.Ctime, st.Mtime
	e.version, e.cversion, e.aversion = st.Version, st.Cversion, st.Aversion
	e.owner, e.dataLength, e.numChildren, e.pzxid = st.EphemeralOwner, st.DataLength, st.NumChildren, st.Pzxid
	e.hasNode = true
	e.mergeList(ls)
	e.setList(ls)
}

// mergeList gives the node the child fields of listing ls when it is of
// the same node and newer.
func (e *entry) mergeList(ls listStat) {
	if e.hasNode && ls.Czxid == e.czxid && ls.Pzxid > e.pzxid {
		e.cversion, e.numChildren, e.pzxid = ls.Cversion, ls.NumChildren, ls.Pzxid
	}
}

// dropNode forgets the node, its listing and its rare fields.
func (e *entry) dropNode() {
	e.bytes = nil
	e.czxid, e.mzxid, e.ctime, e.mtime, e.owner, e.pzxid = 0, 0, 0, 0, 0, 0
	e.version, e.cversion, e.aversion, e.dataLength, e.numChildren = 0, 0, 0, 0, 0
	e.hasNode, e.listed, e.rare = false, false, nil
}

// path returns e's path, built from the names up to the root: one
// allocation.
func (e *entry) path() string {
	if e.parent == nil {
		return e.name
	}
	var stack [16]*entry
	up := stack[:0]
	n := 0
	r := e
	for ; r.parent != nil; r = r.parent {
		up = append(up, r)
		n += 1 + len(r.name)
	}
	root := r.name
	if root == "/" {
		root = ""
	}
	var b strings.Builder
	b.Grow(len(root) + n)
	b.WriteString(root)
	for i := len(up) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(up[i].name)
	}
	return b.String()
}

// node returns e's node, named path (e's path, which the caller has).
func (e *entry) node(path string) Node {
	return Node{Path: path, Data: e.bytes, Stat: e.stat(), Err: e.nodeErr()}
}

// children returns e's children, sorted by name.
func (e *entry) children() []*entry {
	if e.kids == nil {
		return nil
	}
	return *e.kids
}

// setChildren makes kids, sorted by name, e's children; the table's lock
// is held (table.go).
func (e *entry) setChildren(kids []*entry) {
	switch {
	case len(kids) == 0:
		e.kids = nil
	case e.kids == nil:
		e.kids = &kids
	default:
		*e.kids = kids
	}
}

// kid returns e's child named name, or nil.
func (e *entry) kid(name string) *entry {
	kids := e.children()
	if i, ok := slices.BinarySearchFunc(kids, name, cmpName); ok {
		return kids[i]
	}
	return nil
}

func cmpName(k *entry, name string) int { return strings.Compare(k.name, name) }

func byName(a, b *entry) int { return strings.Compare(a.name, b.name) }

// depth returns e's depth under the cache's root.
func (e *entry) depth() int32 {
	var d int32
	for p := e.parent; p != nil; p = p.parent {
		d++
	}
	return d
}

// kind returns which of its entry's ops o is.
func (o *op) kind() opKind {
	if o == &o.e.data {
		return dataOp
	}
	return listOp
}

// ops returns the entry's two ops.
func (e *entry) ops() [2]*op { return [2]*op{&e.data, &e.listing} }

// err returns why e's node cannot be read whole, as its Node's Err will
// say once a read applies it (nodeErr).
func (e *entry) err() error {
	if e.rare == nil || e.rare.dataErr == nil && e.rare.listErr == nil {
		return nil
	}
	return errors.Join(e.rare.dataErr, e.rare.listErr)
}

// entryRare is what an entry keeps only for a node that cannot be read
// whole, while a check's fetch is in flight, or while its last listing's
// Stat is not the node's.
type entryRare struct {
	dataErr error     // data not readable (NoAuth, too large): followed with exists
	checked *zk.Stat  // Stat of the check whose fetch is in flight
	listErr error     // children not listable
	nodeErr error     // the node's Err, as last applied
	list    *listStat // the last listing's Stat, when not the node's (list)
}

// rareFields returns e's rare fields, made if need be.
func (e *entry) rareFields() *entryRare {
	if e.rare == nil {
		e.rare = &entryRare{}
	}
	return e.rare
}

// tidy lets e's rare fields go once they are empty.
func (e *entry) tidy() {
	if x := e.rare; x != nil && x.dataErr == nil && x.checked == nil && x.listErr == nil && x.nodeErr == nil && x.list == nil {
		e.rare = nil
	}
}

func (e *entry) setDataErr(err error) {
	if err != nil || e.rare != nil {
		e.rareFields().dataErr = err
		e.tidy()
	}
}

func (e *entry) setChecked(st *zk.Stat) {
	if st != nil || e.rare != nil {
		e.rareFields().checked = st
		e.tidy()
	}
}

func (e *entry) setListErr(err error) {
	if err != nil || e.rare != nil {
		e.rareFields().listErr = err
		e.tidy()
	}
}

func (e *entry) setNodeErr(err error) {
	if err != nil || e.rare != nil {
		e.rareFields().nodeErr = err
		e.tidy()
	}
}

func (e *entry) dataErr() error {
	if e.rare == nil {
		return nil
	}
	return e.rare.dataErr
}

func (e *entry) listErr() error {
	if e.rare == nil {
		return nil
	}
	return e.rare.listErr
}

func (e *entry) nodeErr() error {
	if e.rare == nil {
		return nil
	}
	return e.rare.nodeErr
}

func (e *entry) checked() *zk.Stat {
	if e.rare == nil {
		return nil
	}
	return e.rare.checked
}

// job is one read to run; result is what it returned.
type job struct {
	op    *op // nil for a sync
	kind  opKind
	mode  readMode
	path  string
	epoch int32
	seq   uint64
	gen   int  // sync: connGen when sent
	up    bool // sync: sent while the connection was up (Reconnected seen)
	sub   bool // one op of a bulk read
}

type result struct {
	job
	batch    []*result // a bulk read: a result per op; err is the whole read's
	data     []byte
	children []string
	exists   bool
	stat     *zk.Stat
	watch    *connection.Watch
	watched  bool                // a bulk read set the op's watch, through the cache's sink
	sess     *connection.Session // sync: the session it ran in
	err      error
}

func newWorker(c *Cache) *worker {
	w := &worker{
		c:          c,
		client:     c.client,
		pending:    map[*op]readState{},
		hooked:     map[*op]*connection.Watch{},
		results:    make(chan *result, c.opts.concurrency+1),
		retryDelay: minRetryDelay,
	}
	// Listen before looking at the state, so that no transition is missed
	// (one seen twice is harmless).
	w.states = c.client.Listen(c.ctx)
	w.sess = c.client.Session()
	w.history = -1 // known at the first sync
	if w.sess != nil {
		w.history = w.sess.History()
	}
	w.connUp = c.client.State().IsConnected()
	if !w.connUp {
		w.connGen++
		w.wantSync = true
	}
	if w.sess == nil {
		w.needSync, w.wantSync = true, true
	}
	w.root = w.newEntry(nil, c.root, c.root, 0)
	w.initPending = true
	for _, o := range w.root.ops() {
		if o.dirty {
			w.track(o)
			w.schedule(o)
		}
	}
	return w
}

// newEntry makes the entry of a node found at path (named name under
// parent; the root's name is its path), its ops dirty.
func (w *worker) newEntry(parent *entry, name, path string, depth int32) *entry {
	e := &entry{name: name, parent: parent, seen: w.epoch}
	md, sel := w.c.opts.maxDepth, w.c.opts.selector
	e.listable = (md < 0 || int(depth) < md) && (sel.Descend == nil || sel.Descend(path))
	e.data = op{e: e}
	e.listing = op{e: e}
	w.markDirty(&e.data, modeGet)
	if e.listable {
		w.markDirty(&e.listing, modeGet)
	}
	return e
}

func (w *worker) run() {
	defer w.c.wg.Done()
	defer w.shutdown()
	mu := &w.c.mu
	for {
		w.dispatch()
		mu.Lock()
		w.settleRound()
		mu.Unlock()
		select {
		case <-w.c.ctx.Done():
			return
		case <-w.c.inbox.wake:
			mu.Lock()
			w.drain()
			mu.Unlock()
		case r := <-w.results:
			mu.Lock()
			w.drain() // notifications that came before this answer first
			if r.batch != nil {
				w.bulkResult(r)
			} else {
				w.result(r)
			}
			mu.Unlock()
		case s, ok := <-w.states:
			mu.Lock()
			if !ok {
				w.states = nil
				if w.c.ctx.Err() == nil {
					w.clientGone(connection.ErrClosed)
				}
			} else {
				w.state(s)
			}
			mu.Unlock()
		case ch := <-w.c.syncs:
			mu.Lock()
			if w.c.clientErr != nil {
				ch <- w.c.clientErr
			} else {
				w.syncWaiting = append(w.syncWaiting, ch)
				w.wantSync = true
			}
			mu.Unlock()
		case <-w.retryC:
			mu.Lock()
			w.retryC, w.retryTimer = nil, nil
			w.unpark()
			mu.Unlock()
		}
	}
}

// shutdown unhooks every watch, ends the trust period and fails the
// waiting Sync callers: the cache is closed.
func (w *worker) shutdown() {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.walk(w.root, func(e *entry) {
		for _, o := range e.ops() {
			w.unhook(o)
		}
	})
	if w.retryTimer != nil {
		w.retryTimer.Stop()
	}
	if w.c.trusted {
		w.c.trusted = false
		close(w.c.done)
		w.c.done = closedChan
		w.observe(false, ErrClosed)
	}
	w.c.lastErr = ErrClosed
	for _, chs := range [][]chan error{w.syncWaiting, w.syncRiding, w.roundWaiters} {
		for _, ch := range chs {
			ch <- ErrClosed
		}
	}
}

// walk calls f for e and every entry under it, parents first.
func (w *worker) walk(e *entry, f func(*entry)) {
	f(e)
	for _, k := range e.children() {
		w.walk(k, f)
	}
}
