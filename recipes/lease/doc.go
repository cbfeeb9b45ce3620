// Package lease is Kazoo's NonBlockingLease and MultiNonBlockingLease:
// a lease held until a wall-clock time, in Kazoo 2.8's layout and record,
// so that Go and Python services share one.
//
// A taker, under a Kazoo Lock at the lease's path (nodes
// "<path>/_c_<uuid>-__lock__<seq>", counted by Kazoo's Lock as it counts
// its own "<hex>__lock__<seq>"), reads <path>/lease_holder, a JSON record
// {"version": 1, "holder": <identifier>, "end": "<UTC, to the second>"}.
// If another holder's end is after now, it is refused (ErrHeld);
// otherwise it writes its own record, ending at now plus the duration,
// and releases the lock. The holder of the current record obtains it
// again whatever its end: that is how a lease is renewed. ObtainOneOf
// tries "<path>/0" to "<path>/<count-1>" in turn, as
// MultiNonBlockingLease does.
//
// The clock assumption: "now" is each taker's own clock (Kazoo's
// utcnow), compared with the end another taker's clock wrote. Exclusion
// holds only as well as the takers' clocks agree: a taker whose clock is
// ahead by s takes a lease s early. Leave the difference of the clocks
// out of what the holder relies on (stop work that long before End).
//
// How a lease differs from a lock (recipes/mutex): a lock is held while
// its holder's session lives, and is lost, with a signal, when it ends; a
// lease is held until a time, whatever happens to its holder: it
// survives the holder's crash, restart or lost session (the use: one
// host runs an hourly job, another takes over only if the first stops
// renewing), and nothing tells the holder of its end but the clock
// (Done closes at End by this process's clock). Nothing fences a lease:
// there is no token, and no write is refused once it is over. Obtain
// does not wait for a lease: it is refused at once; it waits only for
// the lock, which takers hold for a read and a write.
//
// See docs/lease.md.
package lease
