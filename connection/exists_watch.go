package connection

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// ExistsWatch is Exists that also sets a watch, shared (see Watch): the
// way to wait for a node to be created. On a missing node the watch fires when the
// node is created; on a node that exists, when its data changes or it is
// deleted (as a GetWatch). The answer is read when ExistsWatch is called;
// the watch may be older (set by an earlier caller, while the node was
// missing), so Done may close for a change the answer already shows — a
// spurious wake-up, never a missed one. stat is nil when the node is
// missing. It is safe in any session.
//
// A creation watch stays on the server until the node is created or the
// session ends. Shared, an abandoned wait leaves nothing but the one
// watch of the node, and no goroutine.
func (c *Client) ExistsWatch(ctx context.Context, path string) (ok bool, stat *zk.Stat, w *Watch, err error) {
	n, w, err := c.sharedRead(ctx, "exists", path, existWatch,
		func(zc *zk.Conn, sp string) (n node, err error) { n.exists, n.stat, err = zc.Exists(sp); return },
		func(zc *zk.Conn, sp string) (n node, err error) {
			n.exists, n.stat, n.ch, err = zc.ExistsW(sp)
			return
		})
	if err != nil || !n.exists {
		// go-zookeeper can return (true, stat, ErrNoServer), and a zero
		// Stat for a missing node.
		return false, nil, w, err
	}
	return true, n.stat, w, nil
}
