package cache

import (
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// DefaultConcurrency is how many reads a cache keeps in flight at most
// unless WithConcurrency says otherwise.
const DefaultConcurrency = 16

// maxConcurrency bounds WithConcurrency: each read in flight is a
// goroutine while it lasts.
const maxConcurrency = 1024

// Option configures a Cache.
type Option func(*options) error

type options struct {
	maxDepth    int // -1: no bound
	selector    Selector
	concurrency int
	clearOnLoss bool
	recursive   bool

	// readHook, set by tests only (export_test.go), runs each read made
	// alone: it calls read and then send (which hands the result to the
	// worker), and may hold either back (the results of reads on their
	// own goroutines reach the worker in any order).
	readHook func(path string, listing bool, read, send func())
	// syncHook, set by tests only (export_test.go), runs each sync the
	// same way.
	syncHook func(sync, send func())
}

// Selector chooses the nodes of the subtree a cache holds, as Curator's
// TreeCacheSelector does. A nil function selects everything. The cache
// calls them from its worker: they must be quick and must not call the
// cache.
type Selector struct {
	// Accept reports whether the child at path, found in a cached node's
	// listing, is cached; one that is not is left out with everything
	// under it.
	Accept func(path string) bool
	// Descend reports whether the children of the cached node at path are
	// cached (and listed, with a child watch).
	Descend func(path string) bool
}

// WithMaxDepth bounds the depth of the cached subtree: 0 caches the root
// node alone (Curator's NodeCache), 1 the root and its children
// (PathChildrenCache), and so on. Unbounded unless set.
func WithMaxDepth(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return invalid("max depth %d must not be negative", n)
		}
		o.maxDepth = n
		return nil
	}
}

// WithSelector sets the Selector that chooses the nodes the cache holds.
func WithSelector(s Selector) Option {
	return func(o *options) error {
		o.selector = s
		return nil
	}
}

// WithConcurrency sets how many reads the cache keeps in flight at most
// (DefaultConcurrency unless set; 1 to 1024): more load a large tree
// faster, at a goroutine per read while it lasts.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 || n > maxConcurrency {
			return invalid("concurrency %d must be from 1 to %d", n, maxConcurrency)
		}
		o.concurrency = n
		return nil
	}
}

// WithClearOnSessionLoss empties the view when the client's session is
// lost, instead of keeping the last one known: right after the Untrusted
// event, a Deleted event for every node (children before parents); in the
// next session the view is loaded again from nothing, a Created event for
// every node (parents first), then Trusted. For listeners that must not
// act on nodes they cannot vouch for once the session that watched them is
// gone (the ephemeral nodes of that session are gone for sure, those of
// others may be), at the cost of a full reload and an event per node and
// way. A suspended connection does not clear the view: the session, its
// watches and the view may all still be good, and the same session back
// costs only the reads of what changed.
func WithClearOnSessionLoss() Option {
	return func(o *options) error {
		o.clearOnLoss = true
		return nil
	}
}

// WithRecursiveWatch follows the subtree with one persistent recursive
// watch on the root (ZooKeeper 3.6+ addWatch, as Curator's CuratorCache
// does) instead of a data and a child watch per cached node, and reads
// every node without a watch. The server keeps one watch for the cache
// instead of about two per node. The price is paid at every reconnect:
// the server does not replay, for a persistent watch, the changes made
// while the client was away, so the view is untrusted until the watch is
// set again and the whole subtree read again and compared (one-shot
// watches registered again read only the nodes that changed).
//
// A server before ZooKeeper 3.6 refuses the watch: the cache never
// initializes, and its Untrusted event, Err, Trust and Sync give an
// error wrapping watch.ErrUnsupported. A client that watches the root with
// a non-recursive persistent watch (watch.New without WithRecursive)
// makes New fail with an error wrapping watch.ErrModeConflict. Close
// removes the watch from the server (ZooKeeper 3.8's removeWatches also
// removes the client's one-shot watches of the root's path, those of
// other recipes included); a read with a watch of the root's path on the
// same client stops the recursive watch's reports in ZooKeeper 3.8
// (ZOOKEEPER-4466): do not run a cache without this option, or any
// other recipe that watches the root itself, on the same client and
// root. See docs/cache.md.
func WithRecursiveWatch() Option {
	return func(o *options) error {
		o.recursive = true
		return nil
	}
}

func invalid(format string, args ...any) error {
	return errtext.Errorf("cache: "+format+": %w", append(args, connection.ErrInvalidOption)...)
}
