// Package election is leader election on ZooKeeper: Curator's LeaderLatch
// and LeaderSelector in Go, on the same znodes.
//
// Each candidate creates an ephemeral-sequential node
//
//	<path>/_c_<uuid>-latch-<10-digit sequence>
//
// holding its id (Curator's protected LeaderLatch layout), and the lowest
// sequence leads. A candidate watches only its predecessor (and the
// predecessor's predecessor, as the mutex does): a leader's departure wakes
// at most two candidates, and candidates lead in the order they joined.
// A Go Election and a Curator LeaderLatch on one path elect exactly one
// leader between them.
//
// Leadership is a Term, and a term is honest about distributed reality:
//
//   - Done closes, and Context is cancelled, the moment leadership can no
//     longer be trusted under the connection's error policy: at SUSPENDED
//     (the standard policy, the default) or LOST (the session policy). The
//     client learns of LOST no later than the server can expire the
//     session, so a term's Done closes before another candidate can be
//     elected. Err then says why: ErrTermLost and connection.ErrSuspended
//     for a suspension (the session may live on), connection.ErrSessionLost
//     for a lost session, connection.ErrNodeDeleted for a node another
//     client deleted; ErrResigned after Resign.
//   - A lost term's node is deleted while its session lives (under the
//     standard policy a suspended session may come back, and with it the
//     node, which would leave the election without a leader), and the
//     candidate must campaign again, at the back of the line — as Curator's
//     LeaderLatch does when it reconnects.
//   - Token is a fencing token: the czxid of the term's node, strictly
//     increasing across successive leaders of the election. Pass it to what
//     the leader writes to, and let that refuse older tokens: "one leader"
//     holds as the ensemble sees it; fencing makes it hold for the rest.
//   - After the create, the node is checked to belong to the current
//     session (CURATOR-604), and a cancelled campaign deletes its node.
//
// Run is the selector on top: it calls a function with the term while
// this candidate leads (the function fences its writes with the term's
// Token), cancels its context when the term ends, and with WithRequeue
// campaigns again, as Curator's LeaderSelector with autoRequeue.
//
// WithPriority publishes a candidate's priority in its node's name
// ("<prefix>priority-<p>-latch-<seq>"), where Curator, which orders by the
// text after "latch-" and reads the id from the data, does not look: a
// Curator LeaderLatch still sees one participant per node and one leader.
// A candidate made WithPreemption gives way to a higher priority: as
// leader, once such a candidate has stood in line for the hysteresis (its
// term ends with ErrPreempted, before its node's delete is sent); at the
// head of the line, at once, without a term. The line keeps its order and
// tokens their increase (see WithPriority for why the name, not the data
// or another node).
//
// See docs/election.md.
package election
