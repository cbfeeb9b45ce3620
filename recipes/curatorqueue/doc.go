// Package curatorqueue is Curator's queues in Curator's layout, so that Go
// and Java (Curator) producers and consumers share one queue on the same
// paths:
//
//	Simple (SimpleDistributedQueue)  <path>/qn-<seq>                 the item's bytes
//	Queue, New (DistributedQueue)    <path>/queue-<seq>              items framed as below
//	NewPriority (...PriorityQueue)   <path>/queue-<s><8 hex><seq>     s: 1 for a priority >= 0, else 0
//	NewDelay (DistributedDelayQueue) <path>/queue-|<hex epoch ms>|<seq>
//	NewID (DistributedIdQueue)       <path>/queue-|<id>|<seq>
//	WithLockPath (lock-safety mode)  <lockPath>/<message name>       ephemeral, while a consumer holds it
//
// A DistributedQueue node's data are Curator's ItemSerializer framing: a
// 4-byte version 0x00010001, then for each item the byte 0x01, a 4-byte
// big-endian length and the item's bytes, then the byte 0x02. One node
// holds one item (Put) or a batch (PutMulti); the items are the bytes
// Curator's QueueSerializer made, passed through.
//
// Taking follows Curator's consumers: list the queue, sort it in the
// variant's order (by name; an id queue without the id; a delay queue by
// due time, never taking a message before it is due), and take the first
// message that can be had. Without a lock path a message is taken by
// deleting it (at most once: a consumer that dies while processing loses
// it). With a lock path a consumer first creates the message's lock node,
// then reads it, and Consume deletes it (at least once: a consumer whose
// session ends leaves it for another; no two consumers hold it at once).
// Curator's consumers see a lock node of a Go consumer as their own kind.
// Taking deletes with a transaction of one op that is never re-sent, so
// that an unanswered delete is reported (ErrOutcomeUnknown, with the
// data) rather than mistaken for another consumer's take.
//
// Which queue: recipes/queue is the queue to choose for Go services, or
// with Kazoo (its LockingQueue layout): idle workers wait in line without
// a herd, items are held until consumed, priorities and fencing tokens.
// This package is for a queue shared with Curator services, on the paths
// and in the formats they already use: every idle consumer watches the
// queue, as Curator's do.
//
// See docs/curatorqueue.md.
package curatorqueue
