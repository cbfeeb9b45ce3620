package lockcore

import (
	"context"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// admit lets created take part in the queue and waits for its turn
// (await), unless its sequence number is exhausted: then the attempt fails
// with an error that wraps connection.ErrSequenceExhausted, and Acquire
// deletes the node, as after any failed attempt.
//
// Why the directory is given up rather than the tie broken. Once a
// directory's counter reaches its limit, ZooKeeper numbers every node
// 2147483647, or a negative number (see layout.Exhausted); the name no longer
// tells a node's age, and a newcomer would sort ahead of the holder by its
// GUID about half the time, or by its negative number always, and hold
// too. Ordering the ties by czxid would cost every contender a read of
// each tied node, and keep a queue going that only grows more tied: the
// directory must be made again anyway.
//
// Why the rest stays safe. The numbers below the limit are each given
// once, in order of creation, so among the contenders that take part the
// order is still the order of creation — FIFO, and fencing tokens (czxid)
// that grow from holder to holder. A node numbered at the limit sorts
// behind all of them; a negative one sorts ahead, and a waiter that lists
// it waits for it to go (its owner may be a peer that does not refuse
// it). Lock.await's 0-RTT handoff takes a node made after its listing to
// sort behind its own: a node of ours that does not is never a holder.
// That includes the first node numbered 2147483647, which is in fact
// ordered, but cannot tell itself from the ones after it without reading
// theirs.
//
// The first child ever (number 0, which holds without listing) is not
// affected: 3.6+ give 0 once per directory, and a negative number never
// counts up to it.
func (l *Lock) admit(ctx context.Context, t *attempt) error {
	if c, ok := layout.Parse(t.w.ours); ok && layout.Exhausted(c.N) {
		return errtext.Errorf("%w (%s numbered a node %s)", connection.ErrSequenceExhausted, l.Dir, c.Seq)
	}
	return l.await(ctx, t)
}
