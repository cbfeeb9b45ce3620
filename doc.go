// Package zkrecipes is a ZooKeeper recipe library for Go — what Apache
// Curator is to Java — built on github.com/go-zookeeper/zk.
//
// The packages:
//
//   - connection: the connection manager. One ZooKeeper session at a time,
//     Curator's connection states, sessions as epochs whose Done closes when
//     the session is lost (including the expiry a cut-off client never hears
//     of), retries that never leave the session they were issued in, error
//     policies, namespaces, ACLs, digest auth, log/slog logging.
//   - recipes/mutex: the fair, reentrant lock (Curator's InterProcessMutex,
//     on the same znodes), with a lost-lock signal and a fencing token.
//   - recipes/rwlock, recipes/semaphore, recipes/multilock: Curator's
//     read/write lock, counting semaphore and multi-lock.
//   - recipes/election: leader election (Curator's LeaderLatch or
//     LeaderSelector layout), with terms that end before another leader is
//     elected.
//   - recipes/queue: a fair work queue with at-least-once delivery (Kazoo's
//     LockingQueue layout), whose idle workers wait in line.
//   - recipes/curatorqueue: Curator's queues (DistributedQueue and its
//     priority, delay and id variants, SimpleDistributedQueue) in
//     Curator's layout.
//   - recipes/shared: shared values, counts and counters in Curator's and
//     Kazoo's encodings (SharedValue, SharedCount, DistributedAtomicLong,
//     Kazoo's Counter), whose adds count exactly once under lost answers.
//   - recipes/cache: a node, a directory or a subtree mirrored in memory
//     (Curator's CuratorCache, NodeCache, PathChildrenCache, TreeCache),
//     with events and a trust signal.
//   - recipes/node, recipes/group, recipes/discovery: a node kept across
//     lost sessions (PersistentNode, PersistentTtlNode), group membership
//     (GroupMember, Kazoo's Party), service discovery in
//     curator-x-discovery's layout.
//   - recipes/partition: work split among the live members (Kazoo's
//     SetPartitioner).
//   - recipes/barrier: barriers and double barriers.
//   - recipes/lease: Kazoo's leases held until a wall-clock time
//     (NonBlockingLease, MultiNonBlockingLease).
//   - compress: node data compressed as Curator's compressed() builders
//     write it (CompressionProvider, GzipCompressionProvider).
//   - recipes/naive: the herd-prone one-node lock, for comparison.
//   - retry: Curator's retry policies on cenkalti/backoff.
//   - testing/zktest: real ZooKeeper ensembles with fault injection for
//     tests (its Docker backend is the separate module
//     testing/zktest/docker).
//   - cmd/zkrecipes: the command line (a command under a lock or while
//     leading, a work queue, a counter, inspect, watch, register and
//     discover, a development ZooKeeper, the demo).
//
// docs/guide.md walks through one service using five of them
// (examples/service).
//
// # Conventions
//
// One word means one thing in every package:
//
//   - Done() <-chan struct{} closes once, when a thing is over for good, as
//     context.Done does: a hold (a lock's, a lease, a term, a queue item, a
//     partition's share or item), a session, a watch. A lock value's Done
//     is that of its current hold. Nothing re-arms a Done.
//   - Context() is the same end as a context, for the work done under a
//     hold: cancelled when Done closes, with why as its cause.
//   - Trust(ctx) waits until a view or a kept node can be relied on — a
//     cache following the server, a node present in a trusted session —
//     and returns the Untrusted channel of that trust period. Untrusted()
//     returns the current period's channel, closed when the period ends
//     (connection suspended, session lost, node deleted, closed) and
//     already closed while untrusted; the next period has a new channel.
//     Views and kept nodes (cache.Cache, discovery.ServiceCache,
//     shared.Watcher, node.Node, discovery.Registration) have no Done:
//     they are over only when closed, which their owner knows.
//   - Err() says why: on a view or a kept node, why the last trust period
//     ended (or, for a node, why it is absent); on a hold or session, why
//     it ended, nil while it lasts.
//   - Listen(ctx) returns a channel of events that is closed when ctx
//     ends or the thing listened to is closed; a slow reader never blocks
//     what it listens to (each Listen says what such a reader is given).
//   - Close ends a value that owns goroutines, watches or nodes after its
//     calls return, waits for what it started, and is idempotent; later
//     calls that would start work fail with the package's ErrClosed (a
//     closed view stays readable). It is Close() error
//     when closing is local (cache.Cache, shared.Watcher,
//     discovery.ServiceCache and Provider) and Close(ctx) error when it
//     sends requests whose answers it waits for (node.Node, node.TTLNode,
//     discovery.Registration, group.Group, partition.Partitioner,
//     election.Election, queue.Queue, shared.Counter): ctx bounds that
//     wait, never the end of a hold, and what it could not finish is
//     finished in the background while the session lives. A hold handed
//     out ends with its own verb (Unlock, Resign, Release, Consume).
//   - Options are functional: each package's Option (and a named kind
//     such as RunOption or PutOption) is func(*config) error, and an
//     option that does not apply makes the constructor or call return an
//     error wrapping connection.ErrInvalidOption or the package's
//     sentinel.
//   - Every call that blocks or does I/O takes ctx first and returns an
//     error wrapping ctx's error when ctx ends first.
//
// Errors are sentinels of the package that returns them, matched with
// errors.Is (mutex.ErrLockLost, connection.ErrSessionLost), wrapped with
// the operation and the path. A message names each package once: a
// sentinel's text starts with its package's name ("mutex: lock lost"),
// and a name already in a message is not repeated, so Unlock after the
// session was lost says "mutex: unlock /locks/x: lock lost: connection:
// session lost". Misuse (a bad path, an unlock without a lock, use after
// Close) is an error, never a panic.
//
// A program that uses only the recipes links go-zookeeper, backoff and
// the standard library. The module builds and tests with Go 1.22 and
// later. See README.md and docs/ for the algorithms, the safety argument
// and the benchmarks.
package zkrecipes
