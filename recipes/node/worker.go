package node

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/retry"
)

// worker is the Node's goroutine. It alone sends the Node's writes —
// creates, data writes, deletes of its own stale copies — so that a create
// and a write of new data never race, and it alone reads what it keeps.
type worker struct {
	n     *Node
	own   held              // the node it keeps, as far as it knows
	watch *connection.Watch // on own.path, set by the last look
	// valid: own was confirmed by a look whose watch has not fired since,
	// in the current trust period, so a data write needs no look first.
	valid bool
	// mustLook: look at the path before making the node there, since a
	// node may be there (ours, a create's that lost its answer, or in the
	// way); false when the node is known to be gone, and at the start of
	// an ephemeral node's session.
	mustLook bool
	backoff  time.Duration
	spins    int // steps in a row that asked to go again at once
}

// held is what the worker knows of its node; Close deletes by it.
type held struct {
	path    string              // "" while a sequential name is not known
	czxid   int64               // 0 while not known
	version int32               // the data version last seen
	sess    *connection.Session // the session of the last create, or of the last look that found it
	// maybe: a create was sent and neither its node nor its failure is
	// known (its answer was lost); czxid is 0, and a sequential path may
	// be "" too.
	maybe bool
	// made: the last create was answered, in sess: the node it made is at
	// the path, and the look that follows learns its czxid.
	made bool
	sent []byte // the data of the last create at a fixed path
}

// Pauses between attempts the server refused, or that failed beyond the
// client's retry policy: from minBackoff, doubling, up to maxBackoff.
// maxSpins bounds the steps in a row that go again at once (a node that
// comes and goes under the worker's feet) before it pauses too.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
	maxSpins   = 16
)

func (w *worker) run() {
	n := w.n
	defer w.exit()
	for {
		sess, err := n.client.WaitSession(n.ctx)
		if err != nil {
			if n.ctx.Err() == nil {
				// The client is closed: an ephemeral node went with its
				// session, and nothing can be made any more. The waits
				// say so from now on.
				n.setFinished(errtext.Errorf("node: %s: %w", n.base, err))
			}
			return
		}
		w.session(sess)
		if n.ctx.Err() != nil {
			return
		}
	}
}

// session keeps the node in sess until sess is lost or the Node closed.
func (w *worker) session(sess *connection.Session) {
	n := w.n
	if w.own.sess != sess {
		w.valid = false
		if w.own.made {
			// Answered in a session that ended before the look: the node
			// at the path may have been replaced since, so it is judged
			// as after a lost answer (ownsFound).
			w.own.made, w.own.maybe = false, true
		}
		if n.mode.Ephemeral() {
			// It went with its session, or goes soon: make it at once, and
			// a copy still there says so (NodeExists).
			w.own.czxid, w.mustLook = 0, false
		}
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		untrusted, err := sess.Trust(n.ctx)
		if err != nil {
			if n.ctx.Err() == nil {
				n.setAbsent(errtext.Errorf("node: %s: %w", n.base, err))
			}
			return
		}
		watch, err := w.step(sess)
		if n.ctx.Err() != nil {
			return
		}
		var (
			wait  <-chan struct{}
			sleep <-chan time.Time
		)
		switch {
		case err == nil && watch != nil:
			// Present (the watch is on our node), or another's node is
			// in the way (the watch fires when it goes).
			wait = watch.Done()
			w.backoff, w.spins = 0, 0
		case err == nil:
			if w.spins++; w.spins < maxSpins {
				continue
			}
			sleep = w.pause(&timer)
		case sess.Err() != nil || errors.Is(err, connection.ErrSessionLost):
			n.setAbsent(errtext.Errorf("node: %s: %w", n.base, err))
			return
		default:
			if refused(err) {
				n.setRefused(errtext.Errorf("node: make %s: %w", n.base, err))
				connx.Of(n.client).Logger().Error("node: create refused", "path", n.base, "error", err)
			} else {
				n.setAbsent(errtext.Errorf("node: make %s: %w", n.base, err))
			}
			sleep = w.pause(&timer)
		}
		select {
		case <-wait:
			w.fired(watch)
		case <-sleep:
		case <-untrusted:
			w.valid = false
			if sess.Err() == nil {
				n.setAbsent(errtext.Errorf("node: %s: %w", n.base, ErrSuspended))
			}
		case <-n.wake:
		case <-n.ctx.Done():
			return
		}
	}
}

// fired handles the firing of the watch of the last step: the node
// changed or went, or the node in the way went. A deletion of our node
// ends its presence at once; anything else is looked at again.
func (w *worker) fired(watch *connection.Watch) {
	if watch != w.watch {
		return // the other node's watch: its owner's node went, or changed
	}
	w.valid = false
	if watch.Err() == nil && watch.Event().Type == zk.EventNodeDeleted {
		w.n.setAbsent(errtext.Errorf("node: %s: %w", w.n.base, ErrDeleted))
		w.own.czxid, w.mustLook = 0, false // gone: make it at once
	}
}

// pause returns a channel that fires after the current backoff, on *t
// (made on first use), and doubles the backoff for the next time.
func (w *worker) pause(t **time.Timer) <-chan time.Time {
	w.backoff = min(max(2*w.backoff, minBackoff), maxBackoff)
	w.spins = 0
	if *t == nil {
		*t = time.NewTimer(w.backoff)
	} else {
		if !(*t).Stop() {
			select {
			case <-(*t).C: // fired and not read: drop it
			default:
			}
		}
		(*t).Reset(w.backoff)
	}
	return (*t).C
}

// refused reports whether err is the server's (or the client's) refusal
// to do what was asked, which trying again at once would not change: as
// opposed to a lost connection, a lost session or an unknown outcome.
func refused(err error) bool {
	return !retry.Retryable(err) &&
		!errors.Is(err, connection.ErrSessionLost) &&
		!errors.Is(err, connection.ErrOutcomeUnknown) &&
		!errors.Is(err, connection.ErrClosed) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// exit hands what the worker held to Close; if Close stopped waiting, the
// worker deletes it in the background itself.
func (w *worker) exit() {
	n := w.n
	n.mu.Lock()
	n.left = w.own
	why := n.finished
	if why == nil {
		why = ErrClosed
	}
	n.failPendingLocked(why)
	gaveUp := n.gaveUp
	close(n.exited)
	n.mu.Unlock()
	if gaveUp {
		n.releaseLater(w.own)
	}
}
