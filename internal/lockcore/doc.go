// Package lockcore is the sequential-node lock shared by the mutex, the
// read/write lock, the semaphore and leader election: Curator's
// LockInternals done the Go way, and the holds every recipe hands out.
//
// A contender creates a protected ephemeral-sequential node in the lock
// directory, lists the directory (the listing goes right behind the
// create), sorts the contenders by sequence number (recipes/layout reads
// their names) and asks a Predicate whether it holds. If not, it sets
// data watches on its own node and on the one or two nodes the predicate
// names — in one setWatches at the listing's zxid (connection.WatchData),
// or with a read each (GetWatch; never ExistsW, which leaks a creation
// watch on a vanished node) — and waits for them, its context and its
// session. Every failure path deletes the node it created.
//
// Three rules keep exclusion under faults; the code that relies on each
// says so where it does (Hold, Holder, Lock.await, Lock.watch):
//
//  1. A hold ends before its release is sent: Done closes first, then the
//     delete goes, and the hold is over whatever the answer (Hold.End).
//  2. A write sent and not answered may have applied: it is never taken as
//     not done; a node it may have left is deleted in the background, and
//     only if it is still the node the hold made (by czxid: Abandon,
//     Release, connection.DeleteCreated).
//  3. Participants, not sessions, own nodes: a node's owner names the
//     client, shared by many participants, so a hold is this participant's
//     because it made the node (a unique name, or connection.Claim's
//     identity in the data), never because the owner is its session.
//
// And a hold or a waiter whose own node is gone has no turn and no hold
// (waiter.ownGone, Hold.nodeEvent).
package lockcore
