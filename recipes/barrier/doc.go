// Package barrier holds processes back until a condition is met, in the
// znode layouts of Curator's barriers, so that Go and Java (and, where
// the layouts agree, Python) services can meet at the same barrier:
//
//	Barrier (New)        Curator's DistributedBarrier, Kazoo's Barrier: up while
//	                     its node exists; Wait blocks until the node is gone
//	Double  (NewDouble)  Curator's DistributedDoubleBarrier: Enter blocks until
//	                     N members have arrived, Leave until all have left
//
// A double barrier at /b is the directory /b (a container), an ephemeral
// node /b/<uuid> for each member, and /b/ready, created by the member that
// counts N members on arriving; its existence opens the barrier. To leave,
// the lowest member (by name) waits for the highest to go and goes last;
// every other member deletes its node and waits for the lowest to go. The
// last to leave deletes ready.
//
// Every wait takes a context. A wake-up is never taken for the condition:
// ZooKeeper watches fire for changes the waiter does not wait for, and
// the connection's shared watches may fire for a change a read already
// showed, so every wake-up reads the server again, and a member passes
// only on what the server says. (Curator's double barrier passed members
// on wake-ups: GH-1290, and its leave the same way.) A member whose
// session ends while it waits is told: the error wraps ErrMemberLost and
// connection.ErrSessionLost, since its node went with the session and the
// others no longer count it. A member whose wait is cancelled deletes its
// node, so that nobody counts a member that is not there.
//
// See docs/barrier.md for the layouts beside Curator's and Kazoo's, the
// semantics of each call and the tests that try them.
package barrier
