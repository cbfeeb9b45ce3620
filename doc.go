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
//   - recipes/shared: shared values, counts and counters in Curator's and
//     Kazoo's encodings (SharedValue, SharedCount, DistributedAtomicLong,
//     Kazoo's Counter), whose adds count exactly once under lost answers.
//   - recipes/naive: the herd-prone one-node lock, for comparison.
//   - retry: Curator's retry policies on cenkalti/backoff.
//   - testing/zktest: real ZooKeeper ensembles with fault injection for
//     tests (its Docker backend is the separate module
//     testing/zktest/docker).
//   - cmd/zkrecipes: the command line (a command under a lock or while
//     leading, a work queue, a counter, inspect, demo, bench).
//
// Errors are sentinels of the package that returns them, matched with
// errors.Is (mutex.ErrLockLost, connection.ErrSessionLost), wrapped with
// the operation and the path. A message names each package once: a
// sentinel's text starts with its package's name ("mutex: lock lost"),
// and a name already in a message is not repeated, so Unlock after the
// session was lost says "mutex: unlock /locks/x: lock lost: connection:
// session lost".
//
// A program that uses only the recipes links go-zookeeper, backoff and
// the standard library. The module builds and tests with Go 1.22 and
// later. See README.md and docs/ for the algorithms, the safety argument
// and the benchmarks.
package zkrecipes
