package node

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Close ends the node's presence (Untrusted closes first), stops the Node's
// goroutine and deletes the node it made — that node only: it reads the
// node (after a sync) and deletes it if its czxid is the one made, at the
// version read, in its session for an ephemeral node; so a node that was
// at the path before Start, or that someone else made there since, is
// never deleted (unless WithAdoptExisting took it). A create whose answer
// was lost is looked for first (by the path, or by the protected id of a
// sequential node); at a fixed path a persistent node found then is taken
// for the one it made only if it holds the data that create sent,
// unwritten since. If the delete fails while the session lives, the client
// keeps trying in the background (connection.GuaranteedDelete). A
// TTLNode's node is left to its TTL. Close is idempotent.
//
// A create in flight is never abandoned (its answer says whether there is
// a node to delete): Close waits for it, as long as ctx allows. If ctx
// ends first, Close returns an error wrapping ctx's, and the node is
// deleted in the background once the create is answered, or goes with its
// session; the client's Close ends that too.
func (n *Node) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	started := n.started
	n.endLocked(errtext.Errorf("node: %s: %w", n.base, ErrClosed))
	n.mu.Unlock()
	n.cancel()
	if !started {
		return nil
	}
	select {
	case <-n.exited:
	case <-ctx.Done():
		n.mu.Lock()
		select {
		case <-n.exited: // it returned meanwhile: carry on
			n.mu.Unlock()
		default:
			n.gaveUp = true
			n.mu.Unlock()
			return errtext.Errorf("node: close %s: %w (the node is deleted in the background)", n.base, ctx.Err())
		}
	}
	n.mu.Lock()
	h := n.left
	n.mu.Unlock()
	err := n.release(ctx, h)
	unregister(n)
	if err != nil {
		return errtext.Errorf("node: close %s: %w", n.base, err)
	}
	return nil
}

// releaseLater is release after Close stopped waiting, in the worker's
// goroutine as it returns: bounded by the session timeout, and handed to
// the client (GuaranteedDelete) if that is not enough.
func (n *Node) releaseLater(h held) {
	timeout := time.Second
	if h.sess != nil {
		timeout = max(timeout, h.sess.Timeout())
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.release(ctx, h); err != nil {
		connx.Of(n.client).Logger().Warn("node: not deleted at close", "path", n.base, "error", err)
	}
	unregister(n)
}

// release deletes the node h describes, if it is there and ours.
func (n *Node) release(ctx context.Context, h held) error {
	if n.keep || h.sess == nil || h.czxid == 0 && !h.maybe && !h.made {
		return nil // a TTLNode's node, or nothing of ours is there
	}
	eph := n.mode.Ephemeral()
	if eph && !connx.Of(n.client).Live(h.sess) {
		return nil // it went with its session
	}
	p, czxid := h.path, h.czxid
	if czxid == 0 {
		// A create whose answer was lost, or not yet looked at: find what
		// it made.
		if p == "" {
			var err error
			if p, err = n.findOwn(ctx, path.Dir(n.base)); err != nil || p == "" {
				return err
			}
		}
		data, stat, err := n.client.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		if eph && stat.EphemeralOwner != h.sess.ID() || !eph && stat.EphemeralOwner != 0 {
			return nil // not ours: the create did not apply
		}
		if !eph && !n.mode.Sequential() && !n.ownsFound(h, nil, data, stat) {
			return nil // not the one the create made: someone else's
		}
		czxid = stat.Czxid
	}
	sess := h.sess
	if !eph {
		// A persistent node outlives the session that made it: delete it
		// in the current one.
		var err error
		if sess, err = n.client.WaitSession(ctx); err != nil {
			return err
		}
	}
	err := n.deleteOwn(connx.Pin(ctx, sess), p, czxid)
	switch {
	case err == nil:
		return nil
	case eph && errors.Is(err, connection.ErrSessionLost):
		return nil // it went with its session
	}
	if connx.Of(n.client).Live(sess) {
		connx.Of(n.client).GuaranteedDelete(sess, p, czxid)
		return errtext.Errorf("%w (deleted in the background)", err)
	}
	return err
}

// deleteOwn deletes the node at p if it is the one created at czxid, and
// no other (connection.DeleteCreated: a synced read, then a delete at the
// version read; after a lost answer, read again, never sent blind).
// Someone else may have deleted ours and made another at the path: that
// one is left, and nothing of ours is left to delete.
func (n *Node) deleteOwn(ctx context.Context, p string, czxid int64) error {
	err := n.client.DeleteCreated(ctx, p, czxid)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // ours is gone; any node there is another's
	}
	return err
}
