package cache

import (
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// ErrSuspended is the Err of an Untrusted event sent because the client's
// connection was suspended: the view may miss changes until it is back.
var ErrSuspended = errors.New("cache: connection suspended")

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

	queue   []*op        // ops waiting for a read slot, in order
	parked  []*op        // ops whose read failed, until the retry timer or the connection is back
	pending map[*op]bool // ops dirty or in flight
	results chan *result // capacity: every read and the sync in flight
	states  <-chan connection.State

	inflight int    // reads in flight (not the sync)
	seq      uint64 // numbers the reads
	epoch    int    // sessions the view went through; results of another epoch are dropped
	sess     *connection.Session

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

	clientErr error // the client was closed

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

type op struct {
	e    *entry
	kind opKind
	mode readMode // of the next read, while dirty

	w    *connection.Watch // pending watch set by the last read
	stop func() bool       // unhooks w

	dirty, queued, inflight, parked bool

	tracked bool   // counted in the round
	need    uint64 // a read numbered above it ends the tracking
	seq     uint64 // number of the read in flight
}

type entry struct {
	path     string
	parent   *entry
	depth    int
	listable bool // its children are cached (depth and selector)
	kids     map[string]*entry

	node      *Node // last read; published, or held until the parent is
	published bool
	removed   bool
	seen      int // the epoch in which the parent's listing last showed it

	dataErr error    // data not readable (NoAuth, too large): followed with exists
	checked *zk.Stat // Stat of the check whose fetch is in flight
	listErr error    // children not listable
	list    zk.Stat  // Stat of the last listing applied; Czxid 0 for none

	data, listing op
}

// ops returns the entry's two ops.
func (e *entry) ops() [2]*op { return [2]*op{&e.data, &e.listing} }

func (e *entry) err() error {
	if e.dataErr == nil && e.listErr == nil {
		return nil
	}
	return errors.Join(e.dataErr, e.listErr)
}

// job is one read to run; result is what it returned.
type job struct {
	op    *op // nil for a sync
	kind  opKind
	mode  readMode
	path  string
	epoch int
	seq   uint64
	gen   int // sync: connGen when sent
}

type result struct {
	job
	data     []byte
	children []string
	exists   bool
	stat     *zk.Stat
	watch    *connection.Watch
	sess     *connection.Session // sync: the session it ran in
	err      error
}

func newWorker(c *Cache) *worker {
	w := &worker{
		c:          c,
		client:     c.client,
		pending:    map[*op]bool{},
		results:    make(chan *result, c.opts.concurrency+1),
		retryDelay: minRetryDelay,
	}
	// Listen before looking at the state, so that no transition is missed
	// (one seen twice is harmless).
	w.states = c.client.Listen(c.ctx)
	w.sess = c.client.Session()
	w.connUp = c.client.State().IsConnected()
	if !w.connUp {
		w.connGen++
		w.wantSync = true
	}
	if w.sess == nil {
		w.needSync, w.wantSync = true, true
	}
	w.root = w.newEntry(nil, c.root, 0)
	w.initPending = true
	for _, o := range w.root.ops() {
		if o.dirty {
			w.track(o)
			w.schedule(o)
		}
	}
	return w
}

// newEntry makes the entry of a node found at path, its ops dirty.
func (w *worker) newEntry(parent *entry, path string, depth int) *entry {
	e := &entry{path: path, parent: parent, depth: depth, seen: w.epoch}
	md, sel := w.c.opts.maxDepth, w.c.opts.selector
	e.listable = (md < 0 || depth < md) && (sel.Descend == nil || sel.Descend(path))
	e.data = op{e: e, kind: dataOp}
	e.listing = op{e: e, kind: listOp}
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
			w.result(r)
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
			if w.clientErr != nil {
				ch <- w.clientErr
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
	for _, k := range e.kids {
		w.walk(k, f)
	}
}

// --- scheduling -------------------------------------------------------

// markDirty records that o needs a read. A get is never downgraded to a
// check.
func (w *worker) markDirty(o *op, mode readMode) {
	if !o.dirty || mode == modeGet {
		o.mode = mode
	}
	o.dirty = true
	w.pending[o] = true
}

// schedule queues o for a read if it needs one and may have one now.
func (w *worker) schedule(o *op) {
	if o.e.removed || !o.dirty || o.inflight || o.queued || o.parked || !w.open(o.e) {
		return
	}
	o.queued = true
	w.queue = append(w.queue, o)
}

// open reports whether e's reads may be sent: after a lost session, an
// entry waits until its parent's listing in the new session shows it, so
// that no exists is sent for a node deleted meanwhile (it would leave a
// creation watch behind).
func (w *worker) open(e *entry) bool { return e.parent == nil || e.seen == w.epoch }

// dispatch sends reads while there are slots.
func (w *worker) dispatch() {
	if w.clientErr != nil || w.c.ctx.Err() != nil {
		return
	}
	w.dispatchSync()
	if w.needSync {
		return
	}
	for w.inflight < w.c.opts.concurrency && len(w.queue) > 0 {
		o := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		o.queued = false
		if o.e.removed || !o.dirty || o.inflight || o.parked || !w.open(o.e) {
			continue
		}
		mode := o.mode
		if o.kind == dataOp && o.e.dataErr != nil && mode == modeGet {
			mode = modeCheck // not readable: follow its Stat
		}
		w.start(o, mode)
	}
	if len(w.queue) == 0 {
		w.queue = nil // let a long queue's array go
	}
}

// start sends o's read.
func (w *worker) start(o *op, mode readMode) {
	o.dirty, o.inflight = false, true
	w.seq++
	o.seq = w.seq
	w.inflight++
	w.pending[o] = true
	w.c.wg.Add(1)
	go w.read(job{op: o, kind: o.kind, mode: mode, path: o.e.path, epoch: w.epoch, seq: o.seq})
}

func (w *worker) dispatchSync() {
	if !w.wantSync || w.syncInflight || w.syncParked {
		return
	}
	w.wantSync, w.syncInflight = false, true
	w.syncRiding = append(w.syncRiding, w.syncWaiting...)
	w.syncWaiting = nil
	w.c.wg.Add(1)
	go w.read(job{path: w.c.root, epoch: w.epoch, gen: w.connGen})
}

// read runs one job on its own goroutine; the results channel has room
// for every job in flight, so it never blocks.
func (w *worker) read(j job) {
	defer w.c.wg.Done()
	ctx, cl := w.c.ctx, w.client
	r := &result{job: j}
	switch {
	case j.op == nil:
		if r.sess, r.err = cl.WaitSession(ctx); r.err == nil {
			w.c.syncReads.Add(1)
			r.err = cl.Sync(ctx, j.path)
		}
	case j.kind == listOp:
		w.c.reads.Add(1)
		r.children, r.stat, r.watch, r.err = cl.ChildrenWatch(ctx, j.path)
	case j.mode == modeGet:
		w.c.reads.Add(1)
		r.data, r.stat, r.watch, r.err = cl.GetWatch(ctx, j.path)
	case j.mode == modeCheck:
		w.c.reads.Add(1)
		r.exists, r.stat, r.watch, r.err = cl.ExistsWatch(ctx, j.path)
	default:
		w.c.reads.Add(1)
		r.data, r.stat, r.err = cl.Get(ctx, j.path)
	}
	w.results <- r
}

// park keeps o until the retry timer fires or the connection is back.
func (w *worker) park(o *op) {
	if !o.parked {
		o.parked = true
		w.parked = append(w.parked, o)
	}
	w.armRetry()
}

func (w *worker) armRetry() {
	if w.retryC == nil {
		w.retryTimer = time.NewTimer(w.retryDelay)
		w.retryC = w.retryTimer.C
		w.retryDelay = min(2*w.retryDelay, maxRetryDelay)
	}
}

func (w *worker) unpark() {
	if w.retryTimer != nil {
		w.retryTimer.Stop()
		w.retryC, w.retryTimer = nil, nil
	}
	w.syncParked = false
	parked := w.parked
	w.parked = nil
	for _, o := range parked {
		o.parked = false
		w.schedule(o)
	}
}

// --- tracking ---------------------------------------------------------

// track counts o in the round until a read of it sent from now on (or
// the one in flight, if it needs no other) completes.
func (w *worker) track(o *op) {
	if o.e.removed {
		return
	}
	need := w.seq // the next read sent
	if !o.dirty && o.inflight {
		need = o.seq - 1 // the read in flight
	}
	if !o.tracked {
		o.tracked, o.need = true, need
		w.round++
		return
	}
	o.need = max(o.need, need)
}

func (w *worker) untrack(o *op) {
	if o.tracked {
		o.tracked = false
		w.round--
	}
}

// settle records that o's read numbered seq is done.
func (w *worker) settle(o *op, seq uint64) {
	if o.tracked && seq > o.need {
		w.untrack(o)
	}
	if !o.dirty && !o.inflight {
		delete(w.pending, o)
	}
	w.schedule(o)
}

// settleRound ends the round once nothing is tracked.
func (w *worker) settleRound() {
	if w.round > 0 {
		return
	}
	if w.initPending {
		w.initPending = false
		w.c.initialized = true
		close(w.c.initDone)
		w.emit(Event{Type: Initialized})
	}
	for _, ch := range w.roundWaiters {
		ch <- nil
	}
	w.roundWaiters = nil
	w.maybeTrust()
}

// barrier tracks every op that needs or awaits a read: after a sync was
// answered (and the notifications before its answer drained), the view
// holds every change committed before the sync once these reads are done.
func (w *worker) barrier() {
	for o := range w.pending {
		w.track(o)
	}
}

// --- watches ----------------------------------------------------------

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
	in := &w.c.inbox
	o.stop = wch.AfterFire(func(ev zk.Event) { in.push(fired{o, wch, ev}) })
}

// unhook forgets o's pending watch: it stays on the server until it
// fires, but no longer concerns the cache.
func (w *worker) unhook(o *op) {
	if o.w == nil {
		return
	}
	o.stop()
	o.w, o.stop = nil, nil
	w.c.watches.Add(-1)
}

// drain turns fired watches into dirty ops.
func (w *worker) drain() {
	for _, f := range w.c.inbox.take() {
		o := f.o
		if o.w != f.w {
			continue // a watch the op no longer waits on
		}
		o.w, o.stop = nil, nil
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

// --- connection -------------------------------------------------------

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
		}
		w.unpark()
	}
}

// down records a lost connection: the view is no longer trusted.
func (w *worker) down(err error) {
	if w.connUp {
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
// what changed.
func (w *worker) lost(err error) {
	w.epoch++
	w.sess = nil
	w.needSync, w.wantSync = true, true
	w.down(err)
	for _, o := range w.queue {
		o.queued = false
	}
	w.queue = nil
	for _, o := range w.parked {
		o.parked = false
	}
	w.parked = nil
	w.walk(w.root, func(e *entry) {
		for _, o := range e.ops() {
			w.unhook(o)
		}
		w.markDirty(&e.data, modeCheck)
		w.track(&e.data)
		if e.listable && (e.node != nil || e.list.Czxid != 0) {
			w.markDirty(&e.listing, modeGet)
			w.track(&e.listing)
		}
	})
	for _, o := range w.root.ops() {
		w.schedule(o)
	}
}

// clientGone stops the cache's work: the client was closed.
func (w *worker) clientGone(err error) {
	if w.clientErr != nil {
		return
	}
	w.clientErr = err
	w.down(err)
	for _, chs := range [][]chan error{w.syncWaiting, w.syncRiding, w.roundWaiters} {
		for _, ch := range chs {
			ch <- err
		}
	}
	w.syncWaiting, w.syncRiding, w.roundWaiters = nil, nil, nil
}

// --- trust ------------------------------------------------------------

func (w *worker) maybeTrust() {
	c := w.c
	if c.trusted || !c.initialized || !w.connUp || w.needSync || w.syncedGen != w.connGen ||
		w.round > 0 || w.clientErr != nil || w.sess == nil || w.sess.Err() != nil {
		return
	}
	c.trusted = true
	c.done = make(chan struct{})
	close(c.began)
	w.emit(Event{Type: Trusted})
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
	c.done = closedChan
	c.began = make(chan struct{})
	c.lastErr = err
	w.emit(Event{Type: Untrusted, Err: err})
}

// emit hands ev to every listener; c.mu is held.
func (w *worker) emit(ev Event) {
	for l := range w.c.listeners {
		l.push(ev)
	}
}
