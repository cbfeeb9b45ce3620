package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// How the worker makes the node present in a session: look at the node it
// keeps, make it if it is gone, write the newest data. Each step does one
// thing and says what comes next; step runs them in order.
//
// Whose node is it? A node's ephemeralOwner names a session, and a client
// runs many participants on one session. The worker takes a node for its
// own only when nothing else of this client can have made it:
//
//   - At a fixed path, no other Node of the client keeps the same path
//     (Start refuses a second one, ErrInUse), so an ephemeral node of the
//     current session at the path is this Node's: the one a create whose
//     answer was lost made. An ephemeral node of another session — another
//     client's, or this client's earlier session's, which goes when the
//     server expires it — is in the way: the worker waits for it to go.
//     It never deletes it: once it is gone another client may make its
//     own there, and a delete sent then would remove that one.
//   - A persistent kind (persistent, container, TTL) has no owner, so the
//     worker keeps only the node it made (ownsFound): the one its create
//     made, known by its czxid from the look that follows the create's
//     answer. Any other node at the path — there before Start, or made by
//     someone else after deleting ours — is in the way, left as it is,
//     never written nor deleted. WithAdoptExisting takes it instead, as
//     Curator's PersistentNode does.
//   - A sequential node's name carries the Node's own protected id, for
//     the Node's whole life (as Curator keeps one for a PersistentNode):
//     no other participant ever makes that name. So a node found by the id
//     is this Node's in any session. A copy an earlier session of ours
//     left is deleted at once (by the version read: nobody else can make
//     that name again in between), before the node is made again — never
//     two copies.

// step makes the node present in sess and writes the newest data. It
// returns the watch to wait on — on our node when present, on the node in
// the way otherwise — or nil and no error to be called again at once.
func (w *worker) step(sess *connection.Session) (*connection.Watch, error) {
	if !w.valid {
		in, err := w.check(sess)
		if err != nil || in != nil || !w.valid {
			return in, err
		}
	}
	if err := w.write(sess); err != nil || !w.valid {
		return nil, err
	}
	w.n.setPresent(w.own.path)
	if err := w.writeGuarded(sess); err != nil || !w.valid {
		return nil, err
	}
	return w.watch, nil
}

// found is what a look at a path found.
type found int

const (
	gone     found = iota // no node
	ours                  // the node this Node keeps
	stale                 // our copy from an earlier session, at a protected name
	occupied              // a node that is not ours
)

// look reads the node at p with a watch and tells whose it is.
func (w *worker) look(sess *connection.Session, p string) (found, []byte, *zk.Stat, *connection.Watch, error) {
	n := w.n
	data, stat, watch, err := n.client.GetWatch(n.ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return gone, nil, nil, nil, nil
	}
	if err != nil {
		return gone, nil, nil, nil, err
	}
	owner := stat.EphemeralOwner
	switch {
	case n.mode.Ephemeral() && owner == sess.ID():
		return ours, data, stat, watch, nil
	case n.mode.Ephemeral() && owner != 0 && n.mode.Sequential():
		return stale, data, stat, watch, nil
	case !n.mode.Ephemeral() && owner == 0:
		// The server shows no owner for persistent, container and TTL
		// nodes alike: a sequential one is ours by its protected name,
		// one at a fixed path if the worker made it.
		if n.mode.Sequential() || n.ownsFound(w.own, sess, data, stat) {
			return ours, data, stat, watch, nil
		}
	}
	return occupied, data, stat, watch, nil
}

// ownsFound reports whether the persistent node read at the fixed path
// (data and stat, in sess) is the one h says the Node made:
//
//   - Its czxid is the one learned when the Node made it, in any session.
//   - The Node's create was answered in sess, and this is the look that
//     follows it (sent after the create in the same session).
//   - The create's answer was lost (or came in a session that ended before
//     the look): it is the Node's only if it is exactly what that create
//     would have made and nobody wrote since — its data are the data sent,
//     at version 0. A node that fails this is left, even if the create
//     did make it: when in doubt, a node is not taken.
//
// With WithAdoptExisting any node at the path is the Node's.
func (n *Node) ownsFound(h held, sess *connection.Session, data []byte, stat *zk.Stat) bool {
	switch {
	case n.adopt:
		return true
	case h.czxid != 0:
		return stat.Czxid == h.czxid
	case h.made && sess != nil && h.sess == sess:
		return true
	case h.made || h.maybe:
		return stat.Version == 0 && bytes.Equal(data, h.sent)
	}
	return false
}

// check looks at the node and makes it if it is gone. It returns the
// watch on a node in the way, if one is; w.valid tells whether the node is
// ours and present.
func (w *worker) check(sess *connection.Session) (*connection.Watch, error) {
	n := w.n
	if w.own.path == "" {
		return nil, w.makeSequential(sess)
	}
	if !w.mustLook {
		// Nothing there is known to be ours: make it first, as Curator
		// does (one round trip less than a look first), and look after.
		w.mustLook = true
		return nil, w.make(sess)
	}
	what, data, stat, watch, err := w.look(sess, w.own.path)
	if err != nil {
		return nil, err
	}
	switch what {
	case ours:
		w.keepFound(sess, data, stat, watch)
		return nil, nil
	case stale:
		// Ours from an earlier session: it would go when the server
		// expires that session; delete it now, and no node made at the
		// path since (DeleteCreated), and make the node again.
		err := n.client.DeleteCreated(w.pin(sess), w.own.path, stat.Czxid)
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, connection.ErrOutcomeUnknown) {
			return nil, err
		}
		return nil, nil
	case occupied:
		// Whatever we had there is gone: nothing of ours to delete.
		w.own.czxid, w.own.maybe, w.own.made = 0, false, false
		n.setAbsent(errtext.Errorf("node: %s: %w (%s)", w.own.path, ErrOccupied, n.describe(stat, sess)))
		return watch, nil
	}
	if w.own.czxid != 0 {
		// Kept, and gone: deleted while the worker was not watching (a
		// persistent node, between two sessions).
		n.setAbsent(errtext.Errorf("node: %s: %w", w.own.path, ErrDeleted))
	}
	return nil, w.make(sess)
}

// describe says whose a node in the way is.
func (n *Node) describe(stat *zk.Stat, sess *connection.Session) string {
	switch owner := stat.EphemeralOwner; {
	case owner == 0 && n.mode.Ephemeral():
		return "a persistent node; this one is ephemeral"
	case owner == 0:
		return "a node this Node did not make; WithAdoptExisting would take it"
	case owner == sess.ID():
		return "an ephemeral node of this session"
	default:
		return fmt.Sprintf("an ephemeral node of session %#x", owner)
	}
}

// keepFound takes the node a look found as the one kept. A node new to
// the worker (made just now, or found) that does not hold the newest data
// is written; one that was kept all along and now holds other data was
// changed by someone else, and is left as it is (Curator does the same:
// two Nodes on one persistent path never overwrite each other in a loop).
func (w *worker) keepFound(sess *connection.Session, data []byte, stat *zk.Stat, watch *connection.Watch) {
	n := w.n
	fresh := stat.Czxid != w.own.czxid
	w.own.czxid, w.own.version, w.own.sess, w.own.maybe, w.own.made = stat.Czxid, stat.Version, sess, false, false
	w.watch, w.valid = watch, true
	if !n.holdsData(data) && fresh {
		n.holds(0)
	}
}

// make creates the node at its known path: the path given to New, or the
// name a sequential node was given, in the mode without the sequence. It
// returns nil to be looked at again.
func (w *worker) make(sess *connection.Session) error {
	n := w.n
	mode := fixed(n.mode)
	data, _ := n.snapshot()
	w.own.czxid, w.own.sess, w.own.maybe, w.own.made, w.own.sent = 0, sess, true, false, data
	_, err := w.create(sess, w.own.path, data, mode)
	switch {
	case err == nil, errors.Is(err, connection.ErrOutcomeUnknown):
		// Made, or maybe made: the next look tells.
		w.own.made, w.own.maybe = err == nil, err != nil
		if sess.Err() != nil {
			return connection.ErrSessionLost
		}
		return nil
	case errors.Is(err, zk.ErrNodeExists):
		// Answered: a node was at the path before our create, and the
		// look tells whose; a persistent one is not ours (a create of
		// ours whose first answer was lost, retried, comes back as
		// ErrOutcomeUnknown, above).
		w.own.maybe = false
		return nil
	case errors.Is(err, zk.ErrNoNode):
		w.own.maybe = false
		return w.parents(sess, w.own.path)
	}
	w.own.maybe = false
	return err
}

// makeSequential makes a sequential node for the first time, under the
// Node's protected id; after a create whose answer was lost, it first looks
// for a node with that id, which the create may have made.
func (w *worker) makeSequential(sess *connection.Session) error {
	n := w.n
	dir, name := path.Dir(n.base), path.Base(n.base)
	if w.own.maybe {
		p, err := n.findOwn(n.ctx, dir)
		if err != nil {
			return err
		}
		w.own.maybe = false
		if p != "" {
			w.own.path, w.mustLook = p, true
			n.setActual(p)
			return nil // look at it
		}
	}
	data, _ := n.snapshot()
	w.own.sess, w.own.maybe = sess, true
	created, err := w.create(sess, path.Join(dir, n.guid+name), data, n.mode)
	switch {
	case err == nil:
		w.own.path, w.own.maybe, w.mustLook = created, false, true
		n.setActual(created)
		return nil // look at it
	case errors.Is(err, connection.ErrOutcomeUnknown):
		if sess.Err() != nil {
			return connection.ErrSessionLost
		}
		return nil // find it by its id, or make it
	case errors.Is(err, zk.ErrNoNode):
		w.own.maybe = false
		return w.parents(sess, n.base)
	}
	w.own.maybe = false
	return err
}

// findOwn returns the path of the child of dir named with the Node's
// protected id, or "". A sync first makes the server catch up with the
// leader, so that a create of an earlier connection is seen if it applied.
func (n *Node) findOwn(ctx context.Context, dir string) (string, error) {
	if err := n.client.Sync(ctx, dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", err
	}
	kids, _, err := n.client.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, k := range kids {
		if strings.HasPrefix(k, n.guid) {
			return path.Join(dir, k), nil
		}
	}
	return "", nil
}

// create sends one create in sess. It is never abandoned half way: a
// create whose answer is lost may have applied, and only its answer (or
// the end of its session) says whether there is a node to delete. Close
// waits for it.
func (w *worker) create(sess *connection.Session, p string, data []byte, mode connection.Mode) (string, error) {
	n := w.n
	if mode.TTL() {
		return n.client.Create(w.pin(sess), p, data, mode, connection.WithTTL(n.ttl))
	}
	return n.client.Create(w.pin(sess), p, data, mode)
}

// parents makes the missing parents of p as containers, as Curator's
// creatingParentContainersIfNeeded does: the server deletes them once the
// node is gone for good.
func (w *worker) parents(sess *connection.Session, p string) error {
	_, err := w.n.client.Create(w.pin(sess), path.Dir(p), nil, connection.Container, connection.WithParents())
	if err != nil && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		return err
	}
	return nil
}

// write writes the newest data to the node, at the version last seen: a
// write by someone else since, or a new node at the path, makes it look
// again first.
func (w *worker) write(sess *connection.Session) error {
	n := w.n
	if !n.stale() {
		return nil
	}
	data, g := n.snapshot()
	stat, err := n.client.Set(w.pin(sess), w.own.path, data, w.own.version)
	switch {
	case err == nil && stat.Czxid == w.own.czxid:
		w.own.version = stat.Version
		n.holds(g)
		return nil
	case err == nil, errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		w.valid = false
		return nil
	case errors.Is(err, connection.ErrOutcomeUnknown):
		w.valid = false
		if sess.Err() != nil {
			return connection.ErrSessionLost
		}
		return nil // the look tells whether it holds the data
	case errors.Is(err, connection.ErrSessionLost):
		return err
	}
	// Refused (no permission, say): the node stays, with older data;
	// SetData returns the refusal.
	n.writeRefused(g, err)
	connx.Of(n.client).Logger().Error("node: data refused", "path", n.base, "participant", w.own.path, "error", err)
	return nil
}

// pin returns a context for a write in sess: it runs in sess only, and
// nothing cancels it before its answer (or the end of sess).
func (w *worker) pin(sess *connection.Session) context.Context {
	return connx.Pin(context.Background(), sess)
}
