package connection

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// TTL modes: persistent nodes that the server deletes once they have had
// no child and no change for their TTL (ZooKeeper 3.5.3 and later, only
// with the server's zookeeper.extendedTypesEnabled=true). CreateTTL makes
// them. The server looks for expired nodes at its container check interval
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

// CreateTTL creates a node of a TTL mode (PersistentTTL or
// PersistentSequentialTTL) at path, which the server deletes once it has
// had no child and no change for ttl (a whole number of milliseconds,
// from 1 ms to MaxTTL), and returns its path. The parent must exist. A
// server without TTL nodes refuses it with an error matching
// ErrTTLUnsupported.
//
// It runs in one session only, as Create does, and a sequential one is
// not retried after a lost connection either.
func (c *Client) CreateTTL(ctx context.Context, path string, data []byte, mode Mode, ttl time.Duration) (string, error) {
	if !mode.ttl() {
		return "", errtext.Errorf("%w: CreateTTL of %s with mode %s: want a TTL mode", ErrInvalidOption, path, mode)
	}
	if ttl < time.Millisecond || ttl > MaxTTL || ttl%time.Millisecond != 0 {
		return "", errtext.Errorf("%w: TTL %v of %s: want whole milliseconds from 1ms to 2^40-1ms (MaxTTL)", ErrInvalidOption, ttl, path)
	}
	return c.createNode(ctx, "create", path, data, mode, ttl, false)
}

// createTTLRaw is one create request of a TTL mode.
func (c *Client) createTTLRaw(ctx context.Context, zc *zk.Conn, spath string, data []byte, mode Mode, ttl time.Duration) (string, error) {
	acl := aclFor(c.opts.acl, c.client(spath))
	data = orEmpty(data)
	created, err := value(c, ctx, func() (string, error) { return zc.CreateTTL(spath, data, int32(mode), acl, ttl) })
	if err != nil && err.Error() == errUnimplemented {
		err = ErrTTLUnsupported
	}
	return created, err
}
