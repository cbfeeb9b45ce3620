package node

import (
	"context"
	"errors"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/writeguard"
)

// Data writes fenced by a hold.
//
// SetData with WithGuard hands the write to the worker, which alone
// writes the node: it sends it once the node is present, at the version
// it last saw, in one transaction with the guard's check (the guard's
// session must be the Node's: one transaction runs in one session). Only
// a write that committed makes the data the Node's, the data every later
// re-create uses: so what a re-create writes after the hold ended is data
// the hold let through, never data it refused. A write that lost to
// another writer (the version moved, the node was made again) is tried
// again after the worker looked at the node, still guarded; a refused one
// (connection.ErrGuardFailed) and one whose answer was lost
// (connection.ErrOutcomeUnknown) leave the Node's data as it was. A
// guarded write that the worker has not yet taken when the caller gives up
// is never sent.

// WriteOption configures one data write of a Node.
type WriteOption func(*writeOptions) error

type writeOptions struct {
	writeguard.Write
}

// WithGuard makes the write commit only while the hold of g lasts (a
// lock's, a leader's term's: connection.Guard), in one transaction with
// the guard's check. See SetData. A nil g is the guard of no hold: the
// write is refused with connection.ErrGuardFailed.
func WithGuard(g *connection.Guard) WriteOption {
	return func(o *writeOptions) error {
		o.Use(g)
		return nil
	}
}

func writeOpts(opts []WriteOption) (writeOptions, error) {
	var o writeOptions
	err := writeguard.Apply(&o, opts)
	return o, err
}

// guardedWrite is a SetData with a guard, waiting for the worker.
type guardedWrite struct {
	data  []byte
	guard *connection.Guard
	taken bool // the worker is sending it; under n.mu
	done  chan struct{}
	err   error // set before done closes
}

// setDataGuarded is SetData with a guard: see the comment at the top of
// the file.
func (n *Node) setDataGuarded(ctx context.Context, data []byte, g *connection.Guard) error {
	if err := writeguard.Refusal(g); err != nil {
		return err
	}
	req := &guardedWrite{data: slices.Clone(data), guard: g, done: make(chan struct{})}
	n.mu.Lock()
	switch {
	case n.closed:
		n.mu.Unlock()
		return ErrClosed
	case !n.started:
		n.mu.Unlock()
		return ErrNotStarted
	case n.finished != nil:
		err := n.finished
		n.mu.Unlock()
		return err
	case closed(n.exited):
		n.mu.Unlock()
		return ErrClosed
	}
	n.pending = append(n.pending, req)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
	select {
	case <-req.done:
		return req.err
	case <-ctx.Done():
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-req.done:
		return req.err
	default:
	}
	if req.taken {
		// Sent, or about to be: it may apply.
		return errtext.Errorf("%w: %w", connection.ErrOutcomeUnknown, ctx.Err())
	}
	n.pending = slices.DeleteFunc(n.pending, func(r *guardedWrite) bool { return r == req })
	return ctx.Err()
}

// nextGuarded takes the first guarded write waiting, or returns nil.
func (n *Node) nextGuarded() *guardedWrite {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pending) == 0 {
		return nil
	}
	n.pending[0].taken = true
	return n.pending[0]
}

// finishGuarded answers req with err; when it committed (err nil), its
// data become the Node's, unless a SetData came after it was taken.
func (n *Node) finishGuarded(req *guardedWrite, err error, gen uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pending = slices.DeleteFunc(n.pending, func(r *guardedWrite) bool { return r == req })
	if err == nil && n.gen == gen {
		n.data = req.data
		n.gen++
		n.wrote = n.gen
	}
	req.err = err
	close(req.done)
	n.broadcastLocked()
}

// untakeGuarded puts req back to be sent later.
func (n *Node) untakeGuarded(req *guardedWrite) {
	n.mu.Lock()
	defer n.mu.Unlock()
	req.taken = false
}

// failPendingLocked answers the guarded writes not sent with err: the
// worker is gone. n.mu is held.
func (n *Node) failPendingLocked(err error) {
	for _, req := range n.pending {
		req.err = err
		close(req.done)
	}
	n.pending = nil
}

// writeGuarded sends the guarded writes waiting, while the node is
// present in sess and known at its version.
func (w *worker) writeGuarded(sess *connection.Session) error {
	n := w.n
	for w.valid {
		req := n.nextGuarded()
		if req == nil {
			return nil
		}
		_, gen := n.snapshot()
		res, err := n.client.Multi(w.pin(sess),
			&zk.SetDataRequest{Path: w.own.path, Data: req.data, Version: w.own.version}, req.guard)
		switch {
		case err == nil:
			if st := res[0].Stat; st != nil && st.Czxid == w.own.czxid {
				w.own.version = st.Version
			} else {
				w.valid = false
			}
			n.finishGuarded(req, nil, gen)
		case errors.Is(err, connection.ErrOutcomeUnknown):
			w.valid = false
			n.finishGuarded(req, err, gen)
			if sess.Err() != nil {
				return connection.ErrSessionLost
			}
		case errors.Is(err, connection.ErrGuardFailed):
			if req.guard.Err() == nil && sess.Err() != nil {
				// The worker's session ended, not the hold: send it in
				// the next one.
				n.untakeGuarded(req)
				return connection.ErrSessionLost
			}
			n.finishGuarded(req, err, gen)
		case len(res) > 0 && (errors.Is(res[0].Error, zk.ErrBadVersion) || errors.Is(res[0].Error, zk.ErrNoNode)):
			// Another write came first, or the node went: look, then
			// send it again.
			n.untakeGuarded(req)
			w.valid = false
		default:
			n.finishGuarded(req, err, gen)
		}
	}
	return nil
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
