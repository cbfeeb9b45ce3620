package curatorqueue

import "errors"

// Errors of the queues. Match them with errors.Is.
var (
	// ErrEmpty is returned by Peek, Poll and TryTake when no item is
	// available (on a delay queue: none is due).
	ErrEmpty = errors.New("curatorqueue: no item available")
	// ErrOutcomeUnknown is returned, together with the error that says
	// why (which also matches connection.ErrOutcomeUnknown), when the
	// delete that takes an item was sent and not answered: the item may
	// have been removed by this call or may still be in the queue. The
	// item's data come back with the error, so that a caller who must not
	// lose an item can process it (it may then be processed twice).
	ErrOutcomeUnknown = errors.New("curatorqueue: outcome unknown: the delete was sent and not answered")
	// ErrCorrupt means a DistributedQueue node's data are not framed as
	// Curator's ItemSerializer frames them. Curator's consumer logs such
	// a node and deletes it; Take deletes it too and returns its data in
	// the Message, with this error.
	ErrCorrupt = errors.New("curatorqueue: item data not in Curator's framing")
	// ErrMessageLost is returned by Consume and Release when the lock of
	// a message taken under a lock path was lost first: the message is
	// back in the queue, and another consumer may take it. It, and a lost
	// message's Err, wraps what happened: connection.ErrSuspended,
	// connection.ErrSessionLost or connection.ErrNodeDeleted.
	ErrMessageLost = errors.New("curatorqueue: message lost")
	// ErrFinished is returned by Consume and Release on a message that
	// was consumed or released before, and is its Err then.
	ErrFinished = errors.New("curatorqueue: message already consumed or released")
	// ErrNoLockPath is returned by Release on a message of a queue
	// without a lock path: it was removed from the queue when taken.
	ErrNoLockPath = errors.New("curatorqueue: the queue has no lock path")
	// ErrWrongKind means a put option of another variant (WithPriority
	// on a queue made by New, say), or a put without the option its
	// variant needs (a delay queue's due time, an id queue's id).
	ErrWrongKind = errors.New("curatorqueue: option not of this queue's variant")
	// ErrClosed is returned by every method of a Queue after Close, and
	// by a Put or Take that Close ended.
	ErrClosed = errors.New("curatorqueue: closed")
)
