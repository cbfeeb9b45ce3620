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
// See docs/shared.md for the layouts, the argument and the figures.
package shared
