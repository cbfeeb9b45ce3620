// Package lockcore is the sequential-node lock shared by the mutex, the
// read/write lock, the semaphore and leader election: Curator's
// LockInternals done the Go way.
//
// A contender creates a protected ephemeral-sequential node in the lock
// directory, reads its own node's Stat and the directory listing together,
// sorts the contenders by sequence number and asks a Predicate whether it
// holds. If not, it watches the one or two nodes the predicate names with
// GetW (never ExistsW, which leaks a creation watch on a vanished node) and
// waits for them, its context and its session. Every failure path deletes
// the node it created.
package lockcore
