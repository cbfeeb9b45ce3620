package queue

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// linePlace is a worker's place at the head of the line, which it gives
// up once, either early (leaveSoon, in the background, as soon as the
// create of its taken node is written) or when its wait ends (leave, which also waits for
// an early leave to be done, so that Take returns with no request of its
// own in flight).
//
// The head leaves as the create of its taken node is written: the delete
// of its place goes out behind the create on the same connection
// (connection.ClaimHooks.Written), not after its answer, and the line's
// path per item is the listing and that one round trip. (When the hook is
// not called — the create failed before it was written, or another worker
// of this client was claiming the same item — the place goes once the
// claim returns: later, still behind the create.)
//
// Safe: the line decides nothing about who has an item — the taken node
// alone does, and no create of another worker can succeed on it while it
// is there — so giving up the place early can never let two workers take
// one item; at worst it costs a refused create. The order is kept too.
// The next in line moves up when it hears our place deleted; our create
// was written before that delete, on the same connection, so the leader
// applies it first,
// and if the next one's listing, on a server that has not applied our
// create yet, shows our item free, its own create of the item is refused
// and it takes the next one: each item's first take still comes before
// the next item's. What changes is what happens after: the rest of the
// take (reading the taken node back, the entry's data, the hold) no
// longer keeps the next worker waiting. If our create is refused (a
// worker that does not line up, or a TryTake, had the item), or the rest
// fails or finds the item gone, the worker is no longer at the head, and
// it lines up again (lockcore.ErrRestart) rather than scanning on beside the new
// head.
type linePlace struct {
	q      *Queue
	place  lockcore.Acquired
	once   sync.Once
	left   chan struct{} // closed once the place is given up
	early  bool          // leaveSoon was called; read after once
	listed bool          // the head has listed the queue once
}

// leaveSoon gives up the place in the background. It is the claim's
// Written hook, called from the connection's writer, so it must never
// block: its once.Do body only starts a goroutine, and leave's blocking
// body never runs once leaveSoon has (claim calls leaveSoon after the
// claim in any case, before Take can call leave).
func (ln *linePlace) leaveSoon() {
	ln.once.Do(func() {
		ln.early = true
		go func() {
			defer close(ln.left)
			ln.q.leave(ln.place)
		}()
	})
}

// gone reports whether leaveSoon was called: the worker is no longer at
// the head of the line. Only the goroutine of the take calls it.
func (ln *linePlace) gone() bool { return ln != nil && ln.early }

// leave gives up the place, if it is still held, and waits until it is.
func (ln *linePlace) leave() {
	ln.once.Do(func() {
		defer close(ln.left)
		ln.q.leave(ln.place)
	})
	<-ln.left
}

// leave gives up a place in line, so that the next idle worker moves up.
func (q *Queue) leave(place lockcore.Acquired) {
	ctx, cancel := context.WithTimeout(context.Background(), lockcore.CleanupTimeout(place.Session))
	defer cancel()
	if err := q.line.Release(ctx, place); err != nil && !errors.Is(err, connection.ErrSessionLost) {
		connx.Of(q.client).GuaranteedDelete(place.Session, place.Path, place.Token)
	}
}
