package connection

import (
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Watches after a reconnect: the tracker (internal/wire) holds
// Reconnected until the watches pending on the handle are registered
// again; the client tells it which those are.

// restoreKey is a watch the tracker waits to see sent again.
type restoreKey = wire.WatchKey

// restoreKeys returns the shared watches of handle zc that go-zookeeper
// holds: those whose read returned with the watch set and that have not
// fired.
func (c *Client) restoreKeys(zc *zk.Conn) map[restoreKey]struct{} {
	keys := map[restoreKey]struct{}{}
	if zc == nil {
		return keys
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	for key, first := range c.watches {
		if key.zc != zc {
			continue
		}
		for w := first; w != nil; w = w.next {
			if w.ready && !w.fired {
				keys[restoreKey{Path: key.spath, Kind: key.kind}] = struct{}{}
				break
			}
		}
	}
	c.ownPendingLocked(zc, func(spath string, kind watchKind) { keys[restoreKey{Path: spath, Kind: kind}] = struct{}{} })
	return keys
}
