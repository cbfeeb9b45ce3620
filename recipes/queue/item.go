package queue

import (
	"context"
	"errors"
	"path"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Item is an item taken by this worker.
type Item struct {
	q    *Queue
	e    entry
	data []byte
	hold *lockcore.Hold

	mu       sync.Mutex
	finished bool
}

// Data returns the item's data.
func (it *Item) Data() []byte { return it.data }

// Name returns the item's node name, "entry-<priority>-<sequence>".
func (it *Item) Name() string { return it.e.name }

// Priority returns the item's priority.
func (it *Item) Priority() int { return it.e.priority }

// Token returns the czxid of this take's taken node: it increases from
// take to take of the item, so a system that records results can refuse a
// stale worker's.
func (it *Item) Token() int64 { return it.hold.Token }

// Guard returns a guard of this take for connection.Client.Multi: the
// transaction commits only while the take lasts — its taken node still
// there, in its session, and the item not consumed, released or lost —
// all or nothing. A worker that records its result in ZooKeeper does so
// under the guard, and a result of a take that was lost (the item goes
// to another worker) never lands. A take that ended makes Multi fail with
// connection.ErrGuardFailed (and ErrItemLost or ErrFinished), nothing
// applied.
//
// The taken node is at a fixed path that another worker may make again
// once this one is gone: the transaction is written in the take's session
// only, and only while the take is on. If someone else deletes the taken
// node and another worker takes the item at once, a transaction written
// before this worker heard of the deletion can still commit, as its Done
// is still open then.
func (it *Item) Guard() *connection.Guard { return it.hold.Guard() }

// Done returns a channel that is closed when this take can no longer be
// trusted under the connection's error policy — from then on another
// worker may take the item — or when the item is consumed or released.
func (it *Item) Done() <-chan struct{} { return it.hold.Done() }

// Context returns a context for the item's processing: cancelled when Done
// closes, with Err as its cause.
func (it *Item) Context() context.Context { return it.hold.Context() }

// Err returns nil while the take lasts, and then why it ended, as
// Context's cause does: ErrFinished after Consume or Release, or
// ErrItemLost wrapping what happened first — connection.ErrSuspended (the
// connection was suspended under connection.StandardPolicy; the session
// may live on), connection.ErrSessionLost (the session ended) or
// connection.ErrNodeDeleted (another client deleted the taken node). A
// lost item is delivered again.
func (it *Item) Err() error { return it.hold.Cause() }

// Consume removes the item from the queue (Kazoo's consume): its entry
// and its taken node go in one transaction, in the take's session only.
// The take ends before the transaction is sent (Done closes): from then on
// the item is not this worker's, whatever the answer. It returns an error
// matching ErrItemLost when the take was lost first (the item is back in
// the queue and will be delivered again), and ErrFinished when the item
// was consumed or released before. If the transaction was sent and its
// answer lost (ctx ended first, or the connection was lost), the error
// also matches ErrOutcomeUnknown: the item may be gone, or will be
// delivered again — its taken node is deleted in the background while the
// session lives, if the transaction did not take it.
func (it *Item) Consume(ctx context.Context) error {
	return it.finish(ctx, "consume", it.remove)
}

// Release puts the item back at its place for another worker (or this
// one) to take; it returns the errors Consume does. The take ends before
// the delete is sent.
func (it *Item) Release(ctx context.Context) error {
	return it.finish(ctx, "release", it.untake)
}

func (it *Item) finish(ctx context.Context, op string, release func(context.Context, lockcore.Acquired) error) error {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.finished {
		return it.errorf(op, ErrFinished)
	}
	it.finished = true
	it.q.c.Untrack(it)
	var err error
	if op == "consume" {
		err = it.hold.EndConsumed(ctx, release)
	} else {
		err = it.hold.End(ctx, release)
	}
	if err != nil && errors.Is(err, connection.ErrOutcomeUnknown) {
		err = errors.Join(ErrOutcomeUnknown, err)
	}
	if err != nil {
		return it.errorf(op, err)
	}
	return nil
}

func (it *Item) errorf(op string, err error) error {
	return errtext.Errorf("queue: %s %s/%s: %w", op, it.q.entries, it.e.name, err)
}

// remove deletes the entry and the taken node together, pinned to the
// take's session. It is sent once: a transaction whose answer was lost is
// never sent again (connection.Multi), and a taken node it may have left
// is deleted by czxid (lockcore.Hold.End).
func (it *Item) remove(ctx context.Context, a lockcore.Acquired) error {
	_, err := it.q.client.Multi(connx.Pin(ctx, a.Session),
		&zk.DeleteRequest{Path: path.Join(it.q.entries, it.e.name), Version: -1},
		&zk.DeleteRequest{Path: a.Path, Version: -1})
	if err != nil && !connx.Of(it.q.client).Live(a.Session) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		return errtext.Errorf("%w (%w)", connection.ErrSessionLost, err)
	}
	return err
}

// untake deletes the taken node, pinned to the take's session, proving
// after a lost answer that it is still this take's (lockcore.Release): the
// path is one any worker may create again once it is gone.
func (it *Item) untake(ctx context.Context, a lockcore.Acquired) error {
	return lockcore.Release(ctx, it.q.client, a)
}
