package cache

import (
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// Tracking: the rounds that Initialized, Sync and trust wait for.
// track counts o in the round until a read of it sent from now on (or
// the one in flight, if it needs no other) completes.
func (w *worker) track(o *op) {
	if o.e.removed {
		return
	}
	w.pend(o) // it is already: tracked ops are dirty or in flight
	st := w.pending[o]
	need := w.seq // the next read sent
	st.readWait = false
	if !o.dirty && o.inflight {
		need = st.seq - 1 // the read in flight
		st.readWait = true
	}
	if !o.tracked {
		o.tracked, st.need = true, need
		w.round++
	} else {
		st.need = max(st.need, need)
	}
	w.pending[o] = st
}

func (w *worker) untrack(o *op) {
	if o.tracked {
		o.tracked = false
		w.round--
	}
}

// settle records that o's read numbered seq is done.
func (w *worker) settle(o *op, seq uint64) {
	if seq > 0 {
		delete(w.floors, o) // read and applied
	}
	if st := w.pending[o]; o.tracked && seq > st.need {
		if st.readWait {
			w.takeFired(o)
		}
		if st.readWait && o.dirty {
			// The read's watch fired before its answer was applied: for
			// a change its data may miss, made before the moment the
			// tracking began. The next read, sent after this one's
			// watch was set, sees it.
			st.need, st.readWait = w.seq, false
			w.pending[o] = st
		} else {
			w.untrack(o)
		}
	}
	if !o.dirty && !o.inflight {
		w.unpend(o)
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

// takeFired marks o dirty when the watch it waits on has fired and the
// event is still on its way to drain: a watch hooked when its read's
// answer was applied (setWatch) that fired before, whose event the hook
// put in the inbox only then — after a sync answered later may have been
// handled. drain skips the event (o no longer waits on that watch). The
// end of the watch's session is left to drain, which checks the session.
func (w *worker) takeFired(o *op) {
	wch := w.hooked[o]
	if wch == nil || o.e.removed || !connx.Fired(wch) || wch.Event().Type == zk.EventNotWatching {
		return
	}
	w.forget(o)
	w.markDirty(o, modeGet)
}
