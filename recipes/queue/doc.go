// Package queue is a distributed work queue on ZooKeeper: workers take
// items in the order they were put (by priority, then age), one worker
// processes an item at a time, and an item whose worker dies goes back to
// its place. Delivery is at least once.
//
// The layout is Kazoo's LockingQueue, so Go and Python workers can share
// a queue:
//
//	<path>/entries/entry-<3-digit priority>-<10-digit sequence>  persistent, the item's data
//	<path>/taken/<entry name>                                    ephemeral, the taker's data
//
// A worker takes an item by creating its taken node: ephemeral, so it
// goes with the taker's session, and the item is available again at its
// original place. Consume deletes the entry and the taken node in one
// transaction; Release deletes the taken node only.
//
// No herd. Kazoo's idle workers all watch both directories, so every put,
// take and consume wakes every one of them. Idle Go workers instead line
// up in <path>/takers, a mutex (Curator's layout): only the first in line
// watches the queue, the others wait for their predecessor in line. A put
// wakes the first in line; it leaves the line as it makes its taken node,
// and the next worker moves up while it finishes its take. The line is
// only about wake-ups — the
// taken node alone decides who has an item, so Kazoo workers, which do not
// line up, stay safe.
//
// Honest about distributed reality: an Item's Done channel closes when the
// take can no longer be trusted under the connection's error policy —
// before another worker can take it — and Consume after that fails with
// ErrItemLost: the item was (or will be) delivered again. Item.Err says
// what happened: connection.ErrSuspended, connection.ErrSessionLost or
// connection.ErrNodeDeleted (docs/safety.md, "Why a hold ended"). Token is the
// czxid of the taken node, increasing from take to take of one item, for
// a downstream system that must refuse a stale worker's result.
//
// See docs/queue.md.
package queue
