package shared

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Exactness under lost answers.
//
// An operation reads the counter (value, version v) and writes the new
// value over version v. Another participant's write in between makes the
// write fail (BadVersion): read again, try again. The hard case is a write
// whose answer is lost with the connection: it may have applied. Curator
// and Kazoo send it again, and a write that did apply then fails with
// BadVersion, is taken for a conflict, and is added a second time.
//
// Reading the counter does not settle it: version v+1 holding our value
// may be another participant's add of the same delta over the same v. So
// each participant has a marker, an ephemeral child of the counter's node
// made by this Counter in its session, "<path>/_w_<uuid>", and every write
// is one transaction of two versioned sets:
//
//	set <path> to the new value if at version v
//	set <marker> (data unchanged) if at version k
//
// Both apply or neither does, and no one else writes the marker. After a
// lost answer, in the same session, the marker's version says exactly
// what happened: k+1, the write applied; k, it did not — and it never will,
// because the server applies one session's requests in order and refuses
// those of a session after it ends (settleCAS explains why a sync and a
// read in the same session see the lost write if it can still apply). The
// read is trusted only when the session is still the client's after it.
// When the session ended first, the marker went with it and the outcome
// is unknown for good: the operation fails with an error wrapping
// connection.ErrOutcomeUnknown — it never reports success, and never tries
// again blind.
//
// A persistent marker would outlive the session, and after an expiry (the
// server refuses the old session's requests once it has closed it) its
// version would settle the outcome too. But a participant whose process
// dies leaves its persistent marker behind, and nothing can tell an
// abandoned one from one whose owner is about to read it: an orphan per
// dead process, under the counter's node, for ever. (A TTL node would
// bound that, on servers started with extended types enabled, and only
// once nobody will look.) Sessions do expire under partitions, and then
// the error says so; ephemeral markers leave nothing behind.
//
// Curator and Kazoo read and write the counter's data alone and never list
// its children, so the markers are invisible to them (Curator's SharedValue
// watches the node's data, which a child does not change).

// markerPrefix starts the name of every marker child of a counter's node.
const markerPrefix = "_w_"

// IsMarker reports whether name, a child of a counter's node, is a
// Counter's marker.
func IsMarker(name string) bool {
	return strings.HasPrefix(name, markerPrefix) && len(name) == len(markerPrefix)+36
}

// marker is a participant's marker node in one session.
type marker struct {
	path    string
	data    []byte // the claim's identity, written back unchanged
	sess    *connection.Session
	czxid   int64
	version int32 // -1: not known (an answer was lost); read before the next write
}

// try makes one optimistic try: read, compute, write with the marker. It
// returns nil when done (the write applied, or next had nothing to
// write), an error wrapping errConflict when it should be tried again, or
// the error that ends the operation.
//
// With a guard, the guard's check is a third op of the transaction, so the
// marker's version settles a lost answer as it does without one. The
// marker must be of the hold's session: the transaction runs there only.
func (c *Counter) try(ctx context.Context, res *Result, o writeOptions, next func(int64) (int64, bool, error)) error {
	if err := o.Refused(); err != nil {
		return err
	}
	m, err := c.marker(ctx)
	if err != nil {
		return err
	}
	data, stat, err := c.client.Get(ctx, c.path)
	if errors.Is(err, zk.ErrNoNode) {
		c.m = nil // the marker went with the node, or will
		return errConflict
	}
	if err != nil {
		return err
	}
	pre, err := c.opts.encoding.Decode(data)
	if err != nil {
		return err
	}
	res.Pre, res.Post = pre, pre
	post, write, err := next(pre)
	if err != nil || !write {
		return err
	}
	enc, err := c.opts.encoding.Encode(post)
	if err != nil {
		return err
	}
	k := m.version
	if c.beforeWrite != nil {
		c.beforeWrite()
	}
	mr, err := c.client.Multi(connx.Pin(ctx, m.sess), o.ops(
		&zk.SetDataRequest{Path: c.path, Data: enc, Version: stat.Version},
		&zk.SetDataRequest{Path: m.path, Data: m.data, Version: k},
	)...)
	switch {
	case err == nil:
		m.version = k + 1
		res.Succeeded, res.Post = true, post
		return nil
	case errors.Is(err, connection.ErrOutcomeUnknown):
		applied, serr := c.settle(ctx, m, k)
		if o := connx.Of(c.client).Observer(); o != nil && o.CounterOutcome != nil {
			o.CounterOutcome(ctx, connection.CounterOutcome{Path: c.path, Settled: serr == nil, Applied: applied, Err: serr})
		}
		if serr != nil {
			m.version = -1
			return errors.Join(err, serr)
		}
		if applied {
			c.settled[1]++
		} else {
			c.settled[0]++
		}
		if applied {
			m.version = k + 1
			res.Succeeded, res.Post = true, post
			return nil
		}
		return errtext.Errorf("%w: a lost write did not apply", errConflict)
	case errors.Is(err, connection.ErrGuardFailed):
		// Nothing was applied: the hold is over, or its node gone, or the
		// marker is of another session than the hold's (a session that
		// ended, whose marker goes with it).
		if !connx.Of(c.client).Live(m.sess) {
			c.m = nil
		}
		return err
	case errors.Is(err, connection.ErrSessionLost):
		// Refused before it was sent: the marker's session is gone.
		c.m = nil
		return errtext.Errorf("%w: %w", errConflict, err)
	}
	if len(mr) >= 2 {
		switch {
		case errors.Is(mr[0].Error, zk.ErrBadVersion):
			return errConflict
		case errors.Is(mr[0].Error, zk.ErrNoNode):
			c.m = nil
			return errConflict
		case errors.Is(mr[1].Error, zk.ErrBadVersion):
			m.version = -1
			return errtext.Errorf("%w: the marker %s changed", errConflict, m.path)
		case errors.Is(mr[1].Error, zk.ErrNoNode):
			c.m = nil
			return errtext.Errorf("%w: the marker %s is gone", errConflict, m.path)
		}
	}
	return err
}

// settle reads, after the lost answer of a write sent with the marker at
// version k, whether the write applied. The error wraps
// connection.ErrOutcomeUnknown when it cannot tell.
func (c *Counter) settle(ctx context.Context, m *marker, k int32) (applied bool, err error) {
	unknown := func(why string) (bool, error) {
		return false, errtext.Errorf("%w: %s", connection.ErrOutcomeUnknown, why)
	}
	if m.sess.Err() != nil {
		return unknown("the session of the write ended, and its marker with it")
	}
	if err := c.client.Sync(ctx, m.path); err != nil {
		return unknown("no sync: " + err.Error())
	}
	_, stat, err := c.client.Get(ctx, m.path)
	if !connx.Of(c.client).Live(m.sess) {
		return unknown("the session of the write ended, and its marker with it")
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return unknown("the marker " + m.path + " is gone")
	case err != nil:
		return unknown("no read of the marker: " + err.Error())
	case stat.EphemeralOwner != m.sess.ID() || stat.Czxid != m.czxid:
		return unknown("the marker " + m.path + " was replaced")
	case stat.Version == k+1:
		return true, nil
	case stat.Version == k:
		return false, nil
	}
	return unknown("the marker " + m.path + " was written by someone else")
}

// marker returns this participant's marker in the client's current
// session, making one if there is none (and the counter's node, at 0, if
// it does not exist).
func (c *Counter) marker(ctx context.Context) (*marker, error) {
	if m := c.m; m != nil {
		if !connx.Of(c.client).Live(m.sess) {
			c.m = nil // it went with its session
		} else if m.version >= 0 {
			return m, nil
		} else {
			// Its version was lost with an answer: a read in the same
			// session comes after that write. A stale server's read only
			// makes the next write fail on the marker's version.
			_, stat, err := c.client.Get(ctx, m.path)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				c.m = nil
			case err != nil:
				return nil, err
			case stat.EphemeralOwner != m.sess.ID() || stat.Czxid != m.czxid || !connx.Of(c.client).Live(m.sess):
				c.m = nil
			default:
				m.version = stat.Version
				return m, nil
			}
		}
	}
	sess, err := c.client.WaitSession(ctx)
	if err != nil {
		return nil, err
	}
	id := connx.NewUUID()
	name := path.Join(c.path, markerPrefix+id)
	for range 2 {
		created, _, err := connx.Of(c.client).Claim(connx.Pin(ctx, sess), name, []byte(id))
		if errors.Is(err, zk.ErrNoNode) && !errors.Is(err, connection.ErrOutcomeUnknown) {
			zero, _ := c.opts.encoding.Encode(0)
			if _, err := initialize(ctx, c.client, c.path, zero, writeOptions{}); err != nil && !errors.Is(err, connection.ErrOutcomeUnknown) {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		c.m = &marker{path: name, data: []byte(id), sess: created.Session, czxid: created.Czxid}
		return c.m, nil
	}
	return nil, errtext.Errorf("%w: the node %s is deleted as soon as it is made", zk.ErrNoNode, c.path)
}
