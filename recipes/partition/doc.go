// Package partition shares a set of work among the members of a party:
// Kazoo's SetPartitioner in Go, in Kazoo's layout, with a fencing token
// and a lost signal for every item.
//
//	p, err := partition.New(client, "/partitions/queues", []string{"q1", "q2", "q3"},
//		partition.WithIdentifier("worker-7"), partition.WithTimeBoundary(5*time.Second))
//	for {
//		share, err := p.Acquire(ctx) // this member's items, each held
//		for _, it := range share.Items() {
//			go work(it.Context(), it.Name, it.Token) // stops when it.Done() closes
//		}
//		<-share.Done()          // the members changed, or an item was lost
//		err = share.Release(ctx) // give it back; the set is split again
//	}
//	err = p.Close(ctx)
//
// # Algorithm (Kazoo's)
//
// Each member joins a ShallowParty at "<path>/party" (package group,
// layout KazooShallowParty: "<32 hex>-<identifier>"), and follows it
// through the group's cache. Once the party has shown this member and has
// not changed for the time boundary, the member splits the sorted set by
// the sorted identifiers (KazooSplit: every n-th item from its own index)
// and takes, one after another, the lock of each of its items,
// "<path>/locks/<item>", waiting for each as long as the party does not
// change. With every item held the state is Acquired. A change of the
// party ends the share (Release): the member gives it back, and the set
// is split again. A change while it takes items stops the allocation: it
// gives back what it took and waits for the party to be stable again.
//
// The locks are lockcore's, so a Kazoo SetPartitioner sharing the path
// is one more member: our lock nodes are "_c_<uuid>-__lock__<seq>", which
// Kazoo's Lock counts as contenders, and we count its
// "<hex>__lock__<seq>". The directories are persistent, as Kazoo makes
// them.
//
// # Each item a lock
//
// What keeps an item to one member is its lock, not the split: members
// whose views of the party differ for a moment split differently, and a
// member taking an item another still holds waits for it. Each Item is a
// held lock, with what every lock of the library has: Done, closed when
// the hold can no longer be trusted — its session lost, its connection
// suspended under the standard error policy, its node deleted — before
// another member can take it (docs/safety.md says how far before, and
// what no client can know in time); Context, cancelled with it; Err, which
// says why (connection.ErrSuspended, connection.ErrSessionLost,
// connection.ErrNodeDeleted, or ErrReleased); and
// Token, the czxid of its node, which grows with every later holder, for
// the storage to refuse writes of an older holder. Kazoo has none of
// them: its partitioner turns to FAILURE when the session is lost,
// after the fact.
//
// # Unlike Kazoo
//
//   - A lost session does not end the Partitioner: the items' holds end
//     (their Done closes), the share's Done closes, and once it is given
//     back the member joins the party again in its next session and
//     allocates again. Failure is the end of the Partitioner only: Close,
//     or a closed client.
//   - A suspended connection ends the share only through its items: under
//     the standard policy their holds end at once; under the session
//     policy they last until the session is lost, and the share with
//     them, unless the members change meanwhile.
//   - Waiting for an item is not polled: the wait ends when the lock is
//     held or the party changes.
//
// See docs/membership.md for the guarantees, the failure cases and the
// figures.
package partition
