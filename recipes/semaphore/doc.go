// Package semaphore is a distributed counting semaphore on ZooKeeper:
// Curator's InterProcessSemaphoreV2 in Go, on the same znodes.
//
// Layout, under the semaphore's path:
//
//	<path>/locks/_c_<uuid>-lock-<seq>      a mutex taken while acquiring
//	<path>/leases/_c_<uuid>-lease-<seq>   one ephemeral-sequential node per lease
//
// To acquire, a participant takes the locks mutex, creates its lease node,
// and lists the leases: if there are no more than the maximum, the lease
// is granted; otherwise it waits for the leases to change (a children
// watch) and lists again. It releases the mutex once it has all the leases
// it asked for, or none.
//
// Why the maximum is never exceeded: only the holder of the locks mutex
// adds lease nodes, so when it sees at most the maximum after its own
// create, no one else can add one before it lets the mutex go, and
// leases can only leave meanwhile. A lease is released by deleting its
// node, and lost as a lock's hold is: its Done closes, and its Err says why
// (ErrLeaseLost and connection.ErrSuspended, connection.ErrSessionLost or
// connection.ErrNodeDeleted).
//
// The maximum is a number, or a shared count node (Curator's SharedCount:
// a 4-byte big-endian integer) whose changes wake the waiting acquirer.
// Lowering a shared count does not take leases away: until enough are
// released, more than the new maximum may be held.
package semaphore
