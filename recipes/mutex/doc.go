// Package mutex is a distributed, reentrant, fair mutual-exclusion lock on
// ZooKeeper: Curator's InterProcessMutex in Go, on the same znodes.
//
// Each contender creates an ephemeral-sequential node
//
//	<path>/_c_<uuid>-lock-<10-digit sequence>
//
// (Curator's protected layout), and the lowest sequence holds the lock.
// A waiter watches only its predecessor (and the predecessor's predecessor,
// so that it usually knows it is next before the holder lets go): a release
// wakes at most two clients, not the whole queue, and the next holder
// takes over without another request. Waiters are served in sequence order.
//
// Because the layout is Curator's, a Go service and a Java service using
// InterProcessMutex on the same path exclude each other and share one FIFO
// queue. Kazoo's Lock nodes (<hex>__lock__<seq>) are recognised as
// contenders too; Kazoo sees Go nodes with extra_lock_patterns=["-lock-"].
//
// A held lock is honest about distributed reality:
//
//   - Done closes, and Context is cancelled, the moment the hold can no
//     longer be trusted under the connection's error policy: at SUSPENDED
//     (the standard policy, the default) or LOST (the session policy). The
//     client learns of LOST no later than the server can expire the session,
//     so Done closes before another contender can acquire. Err then says
//     why: ErrLockLost and connection.ErrSuspended for a suspension (the
//     session may live on), connection.ErrSessionLost for a lost session,
//     connection.ErrNodeDeleted for a node another client deleted;
//     ErrUnlocked after Unlock.
//   - Token is a fencing token: the czxid of the lock node, strictly
//     increasing across successive holders. Pass it to the storage the lock
//     protects and let it refuse older tokens.
//   - After acquiring, the node is checked to belong to the current session.
//
// See docs/locks.md for the algorithm and its safety argument.
package mutex
