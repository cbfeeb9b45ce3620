package cache

import (
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
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

	// WithRecursiveWatch (recursive.go): one persistent recursive watch on
	// the root, set on each connection before any read is sent on it.
	rec           bool
	watchGen      int // the connGen the watch was set in; -1: never
	watchInflight bool
	watchParked   bool // its setting failed: until the retry timer or the connection is back

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
	// The tracking rests on the read in flight: a change notified
	// before the read's answer is applied — made after a bulk read's
	// data was read and before its watch was set, or after a read's
	// answer, to the watch that read set, which the worker hooks only
	// when it applies the answer — is not in what the read found, and
	// then the next read ends the tracking.
	readWait bool
}

// kind returns which of its entry's ops o is.
func (o *op) kind() opKind {
	if o == &o.e.data {
		return dataOp
	}
	return listOp
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
	// addWatch: the job sets the recursive watch (op nil, gen connGen
	// when sent).
	addWatch bool
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
		results:    make(chan *result, c.opts.concurrency+2),
		retryDelay: minRetryDelay,
		rec:        c.opts.recursive,
		watchGen:   -1,
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
	if w.rec {
		w.c.watches.Store(0) // Close takes it off
	}
	if w.c.trusted {
		w.c.trusted = false
		close(w.c.done)
		w.c.done = chanx.Closed
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
