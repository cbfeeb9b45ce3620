// Package watch follows every change of a node or of a subtree with one
// watch that stays set: Curator's PersistentWatcher for Go, on ZooKeeper's
// persistent and recursive watches (addWatch, ZooKeeper 3.6 and later).
//
//	w, err := watch.New(ctx, client, "/config")                       // the node
//	w, err := watch.New(ctx, client, "/config", watch.WithRecursive()) // the node and every node below
//	for ev := range w.Events() { ... }
//	w.Close()
//
// A one-shot watch (connection.Client's GetWatch) fires once and must be
// set again by a read, which misses nothing only because the read shows
// the node as it is then. A persistent watch stays set: it reports every
// change, as an event each, with no read. It does not carry the node's
// data: read it when the event says it changed.
//
// # What is reported
//
// Without WithRecursive, the node at the path: its creation, data
// changes, the changes of its children (created or deleted, not their
// data) and its deletion. With WithRecursive, the node and every node
// below it: creation, data changes and deletion of each, never a change
// of children (a child's creation or deletion is reported as its own).
// The node need not exist: the watch reports its creation.
//
// # Gaps: Resync and Overflow
//
// ZooKeeper keeps a watch on one connection. When the client reconnects,
// in the same session or in a new one after the session was lost, the
// watcher sets its watch again and then sends Resync: changes made while
// the client was cut off were not reported, and the reader re-reads what
// it needs. Events sent after Resync are those of changes after it was
// set again. A reader that falls more than the buffer (WithBuffer) behind
// loses events: they are dropped, and Overflow, with the number dropped,
// comes once the reader has caught up — again a reason to re-read.
//
// Adding a watch is safe in any session: it changes no node, and a watch
// the connection has already is set again as it was. So the watcher sets
// it in whatever session the client has now, unlike a write, which is
// never sent again in another session.
//
// # Close
//
// Close stops the events (the channel is closed) and takes the watch off
// the server, so that it keeps nothing behind; several watchers of one
// path on one client share the server's watch, which goes with the last.
// Events also ends when the client is closed; Err says why it ended.
//
// # Limits of ZooKeeper 3.8
//
// The server keeps one watch per connection and path, in one mode. A
// client's one-shot data watch (a read's) set on the very path of a
// persistent watch replaces it in ZooKeeper 3.8 (ZOOKEEPER-4466, fixed in
// 3.9): the next change of the node's data is reported, and after it
// none of its data (nor, for a recursive watch, anything below it) until
// the next reconnect. Do not read with a watch, on the same client, the
// path a watcher watches; paths below a recursive watch are not
// affected. For
// the same reason a client watches a path in one mode only: New refuses
// the other with ErrModeConflict. Closing a watcher removes the
// connection's watches of the path, one-shot ones included.
//
// docs/watch.md compares it with Curator's PersistentWatcher.
package watch
