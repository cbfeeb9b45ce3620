package connection

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// TTL modes: persistent nodes that the server deletes once they have had
// no child and no change for their TTL (ZooKeeper 3.5.3 and later, only
// with the server's zookeeper.extendedTypesEnabled=true). Create makes
// them, with WithTTL. The server looks for expired nodes at its container check interval
// (znode.container.checkIntervalMs, a minute by default), so a TTL node
// lives up to that much longer than its TTL.
const (
	PersistentTTL           Mode = zk.FlagTTL
	PersistentSequentialTTL Mode = zk.FlagPersistentSequentialWithTTL
)

// MaxTTL is the longest TTL ZooKeeper accepts: 2^40-1 milliseconds (about
// 34 years).
const MaxTTL = (1<<40 - 1) * time.Millisecond

// ErrTTLUnsupported means the server refused a TTL node as unimplemented:
// ZooKeeper creates TTL nodes only when started with
// -Dzookeeper.extendedTypesEnabled=true (3.5.3 and later).
var ErrTTLUnsupported = errors.New("connection: TTL nodes are not enabled on the server: start it with -Dzookeeper.extendedTypesEnabled=true")

// createTTLRaw is one create request of a TTL mode.
func (c *Client) createTTLRaw(ctx context.Context, zc *zk.Conn, spath string, data []byte, mode Mode, ttl time.Duration) (string, error) {
	acl := aclFor(c.opts.acl, c.client(spath))
	data = orEmpty(data)
	created, err := value(c, ctx, traced(c, ctx, zc, "createTTL", spath, false, func() (string, error) { return zc.CreateTTL(spath, data, int32(mode), acl, ttl) }))
	if err != nil && err.Error() == errUnimplemented {
		err = ErrTTLUnsupported
	}
	return created, err
}
