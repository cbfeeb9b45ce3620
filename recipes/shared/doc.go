// Package shared keeps values and counters that every participant sees in
// the data of one ZooKeeper node, in the encodings of Curator's and Kazoo's
// recipes, so that Go, Java and Python services can share them:
//
//	Value[[]byte]  (NewValue)    Curator's SharedValue: bytes as they are
//	Count          (NewCount)    Curator's SharedCount: a 4-byte big-endian int32
//	Counter        (NewCounter)  Curator's DistributedAtomicLong (Int64, 8 bytes big-endian),
//	                             SharedCount's and Kazoo's Counter(support_curator=True) int32,
//	                             or Kazoo's Counter (Text, the decimal digits)
//
// A Value is read with Get, written with Set (last writer wins) or TrySet,
// a compare-and-set on the version Get returned; Watch follows it (a watch
// on the node, recipes/cache's single-node shape): Current without a
// request, Listen for every new value.
//
// A Counter adds, increments and compares-and-sets, each as an optimistic
// compare-and-set on the node's version, tried again under a retry policy
// when another participant's write came first, and if that runs out,
// under a lock (WithPromotedLock, Curator's PromotedToLock). Its Result
// says whether it succeeded, with the values before and after.
//
// # Exact under lost answers
//
// A write whose answer is lost may have applied. Curator's and Kazoo's
// counters send it again, and an add then counts twice. A Counter never
// does: each write is one transaction with a set of the participant's own
// marker node (an ephemeral child of the counter's node, "_w_<uuid>"),
// whose version, read again in the same session, says whether the write
// applied. So an add reported as succeeded applied exactly once, one
// reported as not succeeded did not apply, and one whose session ended
// before its outcome could be read fails with an error wrapping
// connection.ErrOutcomeUnknown. A Value's TrySet, without a marker,
// settles a lost answer when a read can, and otherwise says it cannot.
//
// # Fenced by a hold
//
// Every write takes WithGuard(g), g a hold's connection.Guard
// (mutex.Mutex.Guard, election.Term.Guard, queue.Item.Guard...): the
// write then commits only while the hold lasts, in the same transaction
// as the guard's check — for a Counter, as its marker's set too, so the
// write is exact as without a guard:
//
//	res, err := builds.Add(ctx, 1, shared.WithGuard(term.Guard())) // only while leading
//
// A hold already over is refused without sending anything; a hold whose
// node the server finds gone, or that ended before the transaction was
// written, makes the server apply nothing; both fail with an error
// matching connection.ErrGuardFailed. A lost answer is settled as without
// a guard (and a write that applied, applied while the hold lasted), or
// fails with connection.ErrOutcomeUnknown. The guard of another client's
// hold is refused (ErrGuardFailed): one transaction runs in one session.
// Under WithPromotedLock the caller's guard fences the tries under the
// lock too; the lock itself is not a fence.
//
// See docs/shared.md for the layouts, the argument and the figures.
package shared
