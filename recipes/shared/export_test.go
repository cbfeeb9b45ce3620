package shared

import (
	"context"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Add exposes the overflow-checked sum to the unit tests.
func (e Encoding) Add(a, delta int64) (int64, error) { return e.add(a, delta) }

// BeforeWrite makes c call f before it sends each write (a fault test's
// hook: the read before the write must get its answer).
func BeforeWrite(c *Counter, f func()) { c.beforeWrite = f }

// Settled returns how many lost answers c settled as not applied and as
// applied. Call it when no operation of c runs.
func Settled(c *Counter) (notApplied, applied int) { return c.settled[0], c.settled[1] }

// SettleCAS runs settleCAS in the client's current session.
func SettleCAS(ctx context.Context, c *connection.Client, path string, prev int32, czxid int64, data []byte) (bool, error) {
	return settleCAS(ctx, c, c.Session(), path, prev, czxid, data)
}

// SettleCASIn runs settleCAS in session sess.
func SettleCASIn(ctx context.Context, c *connection.Client, sess *connection.Session, path string, prev int32, czxid int64, data []byte) (bool, error) {
	return settleCAS(ctx, c, sess, path, prev, czxid, data)
}
