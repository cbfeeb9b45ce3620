package cache

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// Scheduling: which op is read when, and retries.
// markDirty records that o needs a read. A get is never downgraded to a
// check.
func (w *worker) markDirty(o *op, mode readMode) {
	if !o.dirty || mode == modeGet {
		o.mode = mode
	}
	o.dirty = true
	w.pend(o)
}

// pend records o as pending: dirty or in flight.
func (w *worker) pend(o *op) {
	if _, ok := w.pending[o]; !ok {
		w.pending[o] = readState{}
		w.pendingPeak = max(w.pendingPeak, len(w.pending))
	}
}

// sent records o's read numbered seq, now in flight, in bulk or not.
func (w *worker) sent(o *op, seq uint64, bulk bool) {
	w.pend(o)
	st := w.pending[o]
	st.seq, st.bulk = seq, bulk
	w.pending[o] = st
}

// unpend forgets o as pending. A map keeps the table it grew to; once the
// ops of a load (every node's) are done, a new map lets it go.
func (w *worker) unpend(o *op) {
	delete(w.pending, o)
	if len(w.pending) == 0 && w.pendingPeak > 64 {
		w.pending, w.pendingPeak = map[*op]readState{}, 0
	}
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
	if w.c.clientErr != nil || w.c.ctx.Err() != nil {
		return
	}
	w.dispatchSync()
	w.dispatchWatch()
	if w.needSync || w.rec && w.watchGen != w.connGen {
		return
	}
	w.dispatchBulk()
	for w.inflight < w.c.opts.concurrency && len(w.queue) > 0 {
		o := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		o.queued = false
		if o.e.removed || !o.dirty || o.inflight || o.parked || !w.open(o.e) {
			continue
		}
		o.single = false
		mode := o.mode
		if o.kind() == dataOp && o.e.dataErr() != nil && mode == modeGet {
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
	w.sent(o, w.seq, false)
	w.inflight++
	w.c.wg.Add(1)
	go w.read(job{op: o, kind: o.kind(), mode: mode, path: o.e.path(), epoch: w.epoch, seq: w.seq})
}

func (w *worker) dispatchSync() {
	if !w.wantSync || w.syncInflight || w.syncParked {
		return
	}
	w.wantSync, w.syncInflight = false, true
	w.syncRiding = append(w.syncRiding, w.syncWaiting...)
	w.syncWaiting = nil
	w.c.wg.Add(1)
	go w.read(job{path: w.c.root, epoch: w.epoch, gen: w.connGen, up: w.connUp})
}

// read runs one job on its own goroutine; the results channel has room
// for every job in flight, so it never blocks.
func (w *worker) read(j job) {
	defer w.c.wg.Done()
	r := &result{job: j}
	if h := w.c.opts.readHook; h != nil && j.op != nil {
		h(j.path, j.kind == listOp, func() { w.do(r) }, func() { w.results <- r })
		return
	}
	if h := w.c.opts.syncHook; h != nil && j.op == nil && !j.addWatch {
		h(func() { w.do(r) }, func() { w.results <- r })
		return
	}
	w.do(r)
	w.results <- r
}

// do makes r's read, as its job says.
func (w *worker) do(r *result) {
	ctx, cl, j := w.c.ctx, w.client, r.job
	switch {
	case j.addWatch:
		_, r.err = connx.Of(cl).AddWatch(ctx, j.path, true)
	case j.op == nil:
		if r.sess, r.err = cl.WaitSession(ctx); r.err == nil {
			w.c.syncReads.Add(1)
			r.err = cl.Sync(ctx, j.path)
		}
	case w.rec:
		// The recursive watch reports every change: no read sets a
		// watch (one on the root would change the recursive watch's
		// mode in ZooKeeper 3.8, ZOOKEEPER-4466).
		w.c.reads.Add(1)
		switch {
		case j.kind == listOp:
			r.children, r.stat, r.err = cl.Children(ctx, j.path)
		case j.mode == modeCheck:
			r.exists, r.stat, r.err = cl.Exists(ctx, j.path)
		default:
			r.data, r.stat, r.err = cl.Get(ctx, j.path)
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
	w.syncParked, w.watchParked = false, false
	parked := w.parked
	w.parked = nil
	for _, o := range parked {
		o.parked = false
		w.schedule(o)
	}
}
