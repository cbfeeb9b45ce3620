// Package cache mirrors a node, a directory or a subtree of ZooKeeper in
// memory and follows every change: Curator's CuratorCache (NodeCache,
// PathChildrenCache and TreeCache in one) for Go.
//
// One type covers the three shapes, chosen by depth:
//
//	cache.New(client, "/config/flags", cache.WithMaxDepth(0)) // the node alone
//	cache.New(client, "/services/web", cache.WithMaxDepth(1)) // the node and its children, with their data
//	cache.New(client, "/routing")                              // the whole subtree
//
// and a Selector (Curator's TreeCacheSelector) leaves out nodes or whole
// branches. The cache creates no node of its own; the root may be absent,
// and the view follows it when it comes and goes.
//
// # The view
//
// Get returns a node's data and zk.Stat, Children the names of its cached
// children, Snapshot the whole view, as an immutable value. Initialized is
// closed once the first full load is in. Listen delivers events: Created,
// Changed and Deleted for nodes, Initialized once, and Untrusted and
// Trusted as the view's trust ends and begins again. Events of one path come
// in the server's version order, a parent's Created before its children's,
// a parent's Deleted after theirs.
//
// The view is trusted while it follows the server: from Trusted until
// Untrusted, when the client's connection is suspended (under either error
// policy: a cut-off client hears of no change) or its session is lost.
// Untrusted is a channel closed when the current trust period ends (the
// session's Untrusted is the same idea); Trust waits for the next period
// and returns its channel. A cache has no Done: it is never over by
// itself, only when closed. While untrusted the view keeps
// its data: it is the last one known, not an empty one — unless
// WithClearOnSessionLoss says to empty it when the session is lost (not
// when the connection is merely suspended): Deleted for every node, then
// in the next session a full load, Created for every node.
//
// # Listeners never block the cache and never lose an event silently
//
// Each Listen channel has a queue of its own, bounded (WithBuffer,
// DefaultBuffer events). A listener that falls that far behind receives
// Overflow (with the number of events it missed), then Resync with a
// Snapshot of the view taken when it is ready again; the events after the
// Resync apply to that snapshot. Every channel starts with a Resync of the
// view at the time of Listen, so a listener that replays the events onto
// the last Resync's snapshot always holds the cache's view.
//
// # How it follows the server
//
// One worker goroutine per cache owns the view. Each cached node has at most
// one data watch and one child watch on the server (one-shot watches, set
// by the reads themselves, shared through the connection package, so that
// a pending watch costs no goroutine). When a watch fires the worker reads
// the node again; up to WithConcurrency reads are in flight at once, so a
// load is pipelined. A read decides every event: a node whose czxid
// changed was deleted and created again (Deleted, then Created); one whose
// version changed, Changed; one that is gone, Deleted with its subtree.
// Results older than the view (by czxid, mzxid, pzxid) are read again, so
// the view never goes back in time.
//
// Faults:
//
//   - A reconnect within the session: go-zookeeper registers the pending
//     watches again with the last zxid it saw, and the server fires those
//     of nodes that changed meanwhile; the worker reads those nodes only.
//     The connection reports Reconnected once that registration is
//     answered; the view is trusted again once a sync sent after it has
//     been answered and the reads pending then are done.
//   - A lost session: every watch is gone. In the new session the worker
//     first syncs (a new session may reach a server behind the one the view
//     came from), then checks every node with exists (a watch, and the Stat
//     without the data) and reads data only where mzxid or czxid moved; each
//     listed node is listed again, since a child watch can only be set by a
//     listing. The events are the difference between the old view and the
//     new one, not a delete-all and create-all (which WithClearOnSessionLoss
//     asks for).
//   - A replaced database (restored from an older backup, or emptied):
//     a new history, found by the client (Session.History, before the new
//     session is reported) or by the view (a node read older than what it
//     held when it asked, or a zxid it holds read with other contents,
//     neither of which happens in one history). The view
//     starts over as WithClearOnSessionLoss empties it: Deleted for every
//     node with Err wrapping connection.ErrNewHistory, a full load,
//     Trusted.
//   - A node the client may not read (NoAuth) is cached with its Stat (exists
//     needs no permission) and Node.Err set. ZooKeeper notifies no change of
//     such a node, so its Stat is the one it had when found; its deletion
//     is seen in its parent's listing. A directory whose listing is longer
//     than the client accepts (connection.WithMaxBufferSize) is cached
//     without its children, with Node.Err wrapping
//     connection.ErrResponseTooLarge; the answer drops the connection once.
//     Neither stops the cache; nor does size: a directory of 70,000
//     children and a subtree of 100,000 nodes load whole.
//
// # One recursive watch
//
// WithRecursiveWatch follows the subtree as Curator's CuratorCache does:
// one persistent recursive watch on the root (ZooKeeper 3.6+) instead of
// a data and a child watch per node, and reads without watches. The watch
// is set on each connection before any read is sent there; a notification
// marks reads as a fired watch does (a creation reads the parent's
// listing, a change the node's data; a deletion removes the subtree), and
// the reads decide the events, with the same guarantees. The server does
// not replay, for a persistent watch, what changed while the client was
// away: after every reconnect, in the same session too, the watch is set
// again and the whole subtree checked as in a new session before the view
// is trusted again. Close removes the watch from the server.
//
// See docs/cache.md for the guarantees, what is not guaranteed, and the
// figures.
package cache
