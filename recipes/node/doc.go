// Package node keeps a znode present: Curator's PersistentNode and
// PersistentTtlNode in Go, the ground that group membership and service
// registration stand on.
//
//	n, err := node.New(client, "/services/web/host-1", data) // ephemeral unless WithMode says otherwise
//	err = n.Start()
//	err = n.WaitForInitialCreate(ctx)
//	...
//	err = n.Close(ctx) // deletes the node it made
//
// A Node makes its node and keeps it there with its data, across
// connection loss and session expiry: made again in each new session (an
// ephemeral node goes with the old one), made again when someone deletes
// it, and made with the newest data given to SetData. One goroutine per
// Node does it: it watches the node (a shared data watch, no goroutine
// while pending), listens to the session's trust, and is woken by SetData.
//
// # Presence
//
// The node is present when the Node has made or found it in the client's
// current session, and the client trusts that session (connection's error
// policy). Untrusted is a channel closed when the current presence ends —
// the node was deleted, the session lost, the connection suspended under
// the standard policy, the Node closed; Trust waits for the next presence
// and returns its channel (a Node has no Done: it is never over by itself,
// only when closed); Err says why the node is absent. WaitForInitialCreate
// waits for the first presence, and returns early with the server's
// refusal (no permission, TTL nodes not enabled) so that a misconfiguration
// shows at once.
//
// # Never two copies
//
// A create whose answer is lost may have applied. The worker never
// abandons one, and never makes the node again before it knows:
//
//   - At a fixed path there is one node at most. A node of the current
//     session found there after a lost answer is this Node's: Start refuses
//     a second Node of the same client on the same path (ErrInUse), since
//     one session's nodes cannot be told apart by their owner and the data
//     are the caller's. Another session's ephemeral node — another
//     client's, or this client's expired session's, until the server
//     deletes it — is waited for (ErrOccupied), never deleted.
//   - A sequential node's name carries a protected id the Node keeps for
//     its whole life, "<dir>/_c_<uuid>-<name><sequence>". After a lost
//     answer the worker looks for that id (after a sync) before creating
//     again; a copy an earlier session left is deleted first. The node
//     keeps its name when it is made again, as Curator's does.
//   - Persistent kinds (persistent, container, TTL) at a fixed path have no
//     owner, so the Node keeps only the node it made: the one its create
//     made, known by its czxid (learned by the read that follows the
//     create's answer) in any session. A node that was there before Start,
//     or that someone made at the path after deleting the Node's, is not
//     the Node's: it is left as it is (ErrOccupied until it goes), never
//     written and never deleted. After a create whose answer was lost the
//     node found is the Node's only if it holds the data that create sent,
//     unwritten since (version 0); when in doubt it is left.
//     WithAdoptExisting takes whatever node is at the path instead, as
//     Curator's PersistentNode does.
//
// Close ends the presence first, then deletes the node the Node made (or
// adopted) — that node only: it reads the node (after a sync) and deletes
// it only if its czxid is the one made, at the version read — never a
// delete sent blind, which could remove a node someone else made at the
// path since.
//
// # TTL nodes
//
// A Node of a TTL mode (WithMode(connection.PersistentTTL), WithTTL) is a
// node the server deletes once it has had no child and no change for its
// TTL. TTLNode keeps one alive without changing it, by touching a child, as
// Curator's PersistentTtlNode does. TTL nodes need the servers'
// zookeeper.extendedTypesEnabled=true; without it the error matches
// connection.ErrTTLUnsupported.
//
// See docs/membership.md for the guarantees, the failure cases and the
// figures.
package node
