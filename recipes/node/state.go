package node

import (
	"bytes"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// The Node's state as its waits see it: presence periods, the data
// written, refusals. The worker changes it; every change wakes the waits.

// setPresent begins a presence period of the node at p, unless one runs.
func (n *Node) setPresent(p string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.actual = p
	if n.present || n.closed {
		return
	}
	n.present, n.done, n.why = true, make(chan struct{}), nil
	n.created, n.refusal = true, nil
	n.observeLocked(true, nil)
	n.broadcastLocked()
}

// observeLocked tells the client's observer that a presence period
// begins, or ends with cause: a kept node is a view of one node, trusted
// while present. n.mu is held, so that the changes are told in order.
func (n *Node) observeLocked(present bool, cause error) {
	if o := connx.Of(n.client).Observer(); o != nil && o.View != nil {
		o.View(connection.ViewChange{Recipe: n.recipe, Path: n.base, Trusted: present, Cause: cause})
	}
}

// setAbsent ends the presence period, if one runs, and records why the
// node is absent.
func (n *Node) setAbsent(why error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed { // Close said why already
		n.endLocked(why)
	}
}

func (n *Node) endLocked(why error) {
	if n.present {
		close(n.done)
		n.present, n.done = false, chanx.Closed
		n.observeLocked(false, why)
	}
	n.why = why
	n.broadcastLocked()
}

// setFinished records that the worker stopped for good before Close: the
// client was closed. Every wait returns err from then on.
func (n *Node) setFinished(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		n.finished = err
		n.endLocked(err)
	}
}

// setRefused records the server's refusal to make the node: absent, and
// WaitForInitialCreate returns it.
func (n *Node) setRefused(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		n.refusal = err
		n.endLocked(err)
	}
}

// setActual records the node's path (a sequential node's name).
func (n *Node) setActual(p string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.actual = p
}

// snapshot returns the newest data and its generation.
func (n *Node) snapshot() ([]byte, uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.data, n.gen
}

// holds records that the node holds generation g of the data (0: older
// data than any SetData's), and reports whether a newer one waits.
func (n *Node) holds(g uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wrote != g {
		n.wrote = g
		n.broadcastLocked()
	}
}

// holdsData is holds for data read from the node: the newest generation if
// they are its data.
func (n *Node) holdsData(got []byte) bool {
	n.mu.Lock()
	equal := bytes.Equal(got, n.data)
	g := n.gen
	n.mu.Unlock()
	if equal {
		n.holds(g)
	}
	return equal
}

// stale reports whether the node holds older data than the newest, and
// the server has not refused to write the newest.
func (n *Node) stale() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.wrote < n.gen && n.failGen < n.gen
}

// writeRefused records the server's refusal to write generation g.
func (n *Node) writeRefused(g uint64, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.failGen, n.failErr = g, err
	n.broadcastLocked()
}
