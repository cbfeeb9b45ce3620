package cache

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// Reads in bulk. When many nodes wait for a read — the first load, the
// load of a new session, a listing that found many new children — their
// reads go to the server in bulk (connection.ReadWatchMany: a multiRead
// of their data and listings, then their watches set in a setWatches at
// the reads' zxid): a few requests where one read per op would send two
// a node. Each op gets the result a read of its own would have given,
// with its watch, and goes through the same code from there. A few ops
// are read one by one: a bulk read takes two round trips.
//
// A bulk read that fails (the connection lost, a reply too long for the
// client's bound) sends its ops' next reads alone, on the proven path;
// a server without multiRead (before ZooKeeper 3.6) turns bulk reads off
// for the cache's life.

const (
	minBulk     = 8   // nodes queued before their reads go in bulk
	bulkEntries = 256 // nodes in one bulk read
)

// bulkable reports whether o's next read may go in bulk: a get (data and
// watch, or listing and watch) of a node that is readable. A check (an
// exists, after a lost session) goes as a get: in bulk the data costs
// bytes, not requests, and a node found gone leaves no creation watch.
func (w *worker) bulkable(o *op) bool {
	if o.single || o.kind() == dataOp && o.e.dataErr() != nil {
		return false
	}
	return o.mode == modeGet || o.kind() == dataOp && o.mode == modeCheck
}

// dispatchBulk sends the queue's bulkable ops in bulk reads, while there
// are slots and enough of them.
func (w *worker) dispatchBulk() {
	if w.noBulk || len(w.queue) < minBulk {
		return
	}
	conc := w.c.opts.concurrency
	rest := w.queue[:0:0]
	var batch []*op
	nodes := map[*entry]bool{}
	for i, o := range w.queue {
		if w.inflight >= conc {
			rest = append(rest, w.queue[i:]...)
			break
		}
		if o.e.removed || !o.dirty || o.inflight || o.parked || !w.open(o.e) {
			o.queued = false
			continue
		}
		if !w.bulkable(o) {
			rest = append(rest, o)
			continue
		}
		batch = append(batch, o)
		nodes[o.e] = true
		if len(nodes) >= bulkEntries {
			w.startBulk(batch)
			batch, nodes = nil, map[*entry]bool{}
		}
	}
	if len(nodes) >= minBulk {
		w.startBulk(batch)
	} else {
		rest = append(rest, batch...)
	}
	w.queue = rest
}

// startBulk sends ops' reads in one bulk read, one slot.
func (w *worker) startBulk(ops []*op) {
	at := map[*entry]int{}
	var reads []connx.BulkRead
	jobs := make([]job, len(ops))
	for i, o := range ops {
		o.queued, o.dirty, o.inflight = false, false, true
		w.seq++
		w.sent(o, w.seq, true)
		k, ok := at[o.e]
		if !ok {
			k = len(reads)
			at[o.e] = k
			reads = append(reads, connx.BulkRead{Path: o.e.path(), ListOnly: true})
		}
		jobs[i] = job{op: o, kind: o.kind(), mode: modeGet, path: reads[k].Path, epoch: w.epoch, seq: w.seq, sub: true}
		if o.kind() == dataOp {
			reads[k].ListOnly = false
		} else {
			reads[k].Children = true
		}
	}
	idx := make([]int, len(ops))
	for i, o := range ops {
		idx[i] = at[o.e]
	}
	w.inflight++
	w.c.wg.Add(1)
	go w.readBulk(jobs, reads, idx)
}

// readBulk runs a bulk read on its own goroutine and sends its result.
func (w *worker) readBulk(jobs []job, reads []connx.BulkRead, idx []int) {
	defer w.c.wg.Done()
	w.c.reads.Add(int64(len(jobs)))
	var (
		res []connx.BulkResult
		err error
	)
	if w.rec {
		res, err = connx.Of(w.client).ReadMany(w.c.ctx, reads)
	} else {
		res, err = w.c.sink.ReadWatchMany(w.c.ctx, reads)
	}
	r := &result{batch: make([]*result, len(jobs)), err: err}
	for i, j := range jobs {
		sub := &result{job: j}
		if err == nil {
			n := res[idx[i]]
			sub.stat = n.Stat
			if j.kind == dataOp {
				sub.data, sub.watched, sub.err = n.Data, n.DataWatched, n.Err
			} else {
				sub.children, sub.watched, sub.err = n.Children, n.ChildWatched, n.ChildErr
			}
		}
		r.batch[i] = sub
	}
	w.results <- r
}

// bulkResult handles a bulk read's results, op by op; if the whole read
// failed, its ops are read again alone.
func (w *worker) bulkResult(r *result) {
	w.inflight--
	if r.err == nil {
		for _, sub := range r.batch {
			w.result(sub)
		}
		return
	}
	if errors.Is(r.err, connx.ErrBulkUnsupported) {
		w.noBulk = true
	}
	connx.Of(w.client).Logger().Debug("cache: bulk read failed, reading alone", "path", w.c.root, "nodes", len(r.batch), "error", r.err)
	for _, sub := range r.batch {
		o := sub.op
		o.inflight = false
		if o.e.removed {
			w.settle(o, 0)
			continue
		}
		if sub.epoch != w.epoch {
			w.stale(o)
			continue
		}
		if errors.Is(r.err, connection.ErrClosed) || w.c.ctx.Err() != nil {
			sub.err = r.err
			w.result(sub)
			continue
		}
		o.single = true
		w.markDirty(o, modeGet)
		w.settle(o, 0)
	}
}
