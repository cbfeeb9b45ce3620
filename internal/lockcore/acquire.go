package lockcore

import (
	"context"
	"errors"
	"path"
	"slices"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// ErrWouldWait is returned by Acquire without waiting when another
// contender holds the lock.
var ErrWouldWait = errors.New("lockcore: held by another contender")

// Lock describes one contender's way into a lock directory.
type Lock struct {
	Client    *connection.Client
	Dir       string          // the lock directory, e.g. "/locks/orders"
	Name      string          // node name before the GUID's end and the sequence, e.g. "lock-"
	Data      []byte          // the node's data
	Accept    func(Kind) bool // which children are contenders
	Predicate Predicate       // who holds
	// Relist answers every deletion with a fresh listing instead of the
	// 0-RTT handoff: for a queue where a node can be inserted ahead of a
	// waiter after its listing (a read/write lock's downgrade puts a read
	// node at its writer's place), so that the kept listing is no longer a
	// superset of the contenders ahead.
	Relist bool
	// Window, when positive, says the predicate looks at no contender
	// more than Window places ahead of ours, other than to see that there
	// is one (Exclusive: 2, Predecessor: 1): a waiter then keeps Window+1
	// contenders ahead of it instead of all of them, so that a waiter deep
	// in a long queue costs the same memory as the second in line.
	Window int
	// Line says the first place guards nothing — a line of idle workers,
	// where what decides who has an item is elsewhere (a work queue's
	// taken nodes) and the order only saves wake-ups. Its contenders set
	// no watch on their own nodes, and the Acquired has no Own: a place
	// whose node someone else deletes is found out at its next listing.
	// A place whose predecessor goes is first without a listing (see
	// waiter.deleted), as places leave in turn.
	Line bool
	// Recipe names the lock to the client's observer
	// (connection.Observer's Wait, with Dir as its path): "mutex". A
	// Lock without Recipe tells it nothing.
	Recipe string
}

// Acquired is a node that holds the lock.
type Acquired struct {
	Path    string              // the node
	Session *connection.Session // the session that owns it
	Token   int64               // its czxid: the fencing token
	// Trusted is the connected period in which the hold was confirmed
	// (Session.Trusted): it was live then, and is cancelled when holds
	// taken in it can no longer be trusted. Set by Confirm.
	Trusted context.Context
	// Own is a watch on the node, set while it was known to exist, that a
	// hold ends with when the node is deleted (NewHold).
	Own *connection.Watch
	// OwnSoon, when Own is nil, is the watch on the node on its way: a
	// listing that names the node said it holds, and its watch, sent
	// right behind that listing, has not been answered yet. The hold takes it when it
	// comes (NewHold); a node found gone then ends the hold.
	OwnSoon *OwnWatch
}

// OwnWatch is a watch on our own node, sent and not yet answered.
type OwnWatch struct {
	done   chan struct{} // closed once answered
	watch  *connection.Watch
	err    error
	cancel context.CancelFunc // gives up on the answer
}

// watchOwnSoon sends the watch on our own node. Its context is not ctx: a
// hold handed out before the answer must still get it after the caller's
// context ends (cancel gives up).
func (l *Lock) watchOwnSoon(ctx context.Context, own string) *OwnWatch {
	octx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o := &OwnWatch{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(o.done)
		_, _, o.watch, o.err = l.Client.GetWatch(octx, own)
	}()
	return o
}

// firstListing is the listing sent right behind the create
// (CreateProtectedThen), on the same connection: it names our node when
// it was taken after the create applied.
type firstListing struct {
	sent     atomic.Bool   // the request went (then was called)
	done     chan struct{} // closed once answered
	children []string
	stat     *zk.Stat // the directory's
	err      error
}

// send is CreateProtectedThen's then: it must not block. The listing is
// answered through a callback (ChildrenThen): no goroutine of its own
// while the client has a session.
func (f *firstListing) send(ctx context.Context, c *connection.Client, dir string) {
	f.sent.Store(true)
	connx.Of(c).ChildrenThen(ctx, dir, func(children []string, stat *zk.Stat, err error) {
		f.children, f.stat, f.err = children, stat, err
		close(f.done)
	})
}

// names returns the listing and the directory's Stat if it was sent and
// names ours; nil otherwise, or when ctx ends first.
func (f *firstListing) names(ctx context.Context, ours string) ([]string, *zk.Stat) {
	if f == nil || !f.sent.Load() {
		return nil, nil
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, nil // await lists again, and fails with ctx's error
	}
	if f.err != nil || f.stat == nil || !slices.Contains(f.children, ours) {
		return nil, nil
	}
	return f.children, f.stat
}

// errRestart means the attempt's node or session is gone: try again with
// a new node.
var errRestart = errors.New("lockcore: restart")

// Acquire creates a node and waits until it holds the lock, ctx is done,
// or (when wait is false) another contender holds it (ErrWouldWait). On
// any failure its node is deleted. If the session is lost while waiting,
// it starts again in the next session, at the back of the queue.
//
// An idle waiter is its caller's goroutine, parked in park, and its
// attempt. The goroutine's stack grew, during the requests of the wait
// (the connection's retry and cancellation layers), to 8 KiB; the garbage
// collector halves a stack of which less than a quarter is in use, so the
// frames a waiter parks under are kept few and small: Acquire's loop
// calls park itself, between the steps of await, whose state waits in the
// attempt — not in await's frame, which is left.
//
// The observer, if any, is told of the wait when the contender first
// parks, and of its end as Acquire returns (waitBegins).
func (l *Lock) Acquire(ctx context.Context, wait bool) (Acquired, error) {
	var (
		obs   *waitObs
		begun bool
	)
	for {
		t, err := l.create(ctx, wait)
		if err != nil {
			if errors.Is(err, connection.ErrSessionLost) && ctx.Err() == nil {
				continue // CreateProtected waits for the next session
			}
			return Acquired{}, obs.end(err)
		}
		err = l.admit(ctx, t)
		if err == errPark && !begun {
			begun = true
			ctx, obs = l.waitBegins(ctx, t)
		}
		for err == errPark {
			if err = t.park(ctx); err == nil {
				err = l.await(ctx, t)
			}
		}
		if err == nil {
			obs.end(nil)
			return t.a, nil
		}
		if err = l.giveUp(ctx, t, err); err != nil {
			return Acquired{}, obs.end(err)
		}
	}
}

// create makes the node of a new attempt, and sends the first listing
// right behind it: the two cost one round trip.
func (l *Lock) create(ctx context.Context, wait bool) (*attempt, error) {
	first := &firstListing{done: make(chan struct{})}
	created, err := connx.Of(l.Client).CreateProtectedThen(ctx, path.Join(l.Dir, l.Name), l.Data, connection.EphemeralSequential,
		func() { first.send(ctx, l.Client, l.Dir) })
	if err != nil {
		return nil, err
	}
	t := &attempt{
		// The create told the node's owner and czxid (the fencing token).
		a:    Acquired{Path: created.Path, Session: created.Session, Token: created.Czxid},
		wait: wait, first: first,
		w: waiter{ours: path.Base(created.Path), pred: l.Predicate, accept: l.Accept, relist: l.Relist, window: l.Window, line: l.Line},
	}
	t.next = t.w.created()
	return t, nil
}

// giveUp deletes the node of an attempt that failed with err, and returns
// nil to start again with a new node, or the error to return.
func (l *Lock) giveUp(ctx context.Context, t *attempt, err error) error {
	Abandon(l.Client, t.a.Session, t.a.Path, t.a.Token)
	if errors.Is(err, errRestart) && ctx.Err() == nil {
		return nil
	}
	if errors.Is(err, errRestart) {
		err = ctx.Err()
	}
	return err
}

// attempt is one node's way to a hold: await's state between its steps,
// kept while the waiter is parked (see Acquire).
type attempt struct {
	a     Acquired // the node
	w     waiter
	wait  bool
	first *firstListing // the listing sent behind the create, until await takes it
	// Where await goes on from: the next step and its names, the zxid of
	// the listing that asked for them (0 when they come from a kept
	// listing), and whether our node's watch is to be set with a read
	// (it fired for a change of its data).
	next      step
	names     []string
	listed    int64
	ownByRead bool
	wake      chan struct{} // a watch fired (park)
}

// errPark: await waits for one of the attempt's watches (park), then goes
// on.
var errPark = errors.New("lockcore: park")

// await decides whether t's node holds the lock, waiting if allowed: it
// returns nil with the hold in t.a, an error (errRestart: start again
// with a new node), or errPark when it waits for a watch, which Acquire
// does (park) before it calls await again.
//
// Safety of the 0-RTT handoff. A listing taken after our node was created
// holds every contender ahead of ours: sequence numbers of one directory
// only grow (the directory cannot be deleted and recreated while our node
// is in it), so nodes created later sort after ours. From then on the
// contenders ahead of ours can only leave. When a watch says a node was
// deleted we remove it from our listing; what remains ahead of ours is a
// superset of what is really there. Predicates are monotone, so if ours
// holds against that superset it holds in reality, and we hold the lock
// without listing again.
//
// Keeping that superset small. Nodes we do not watch leave unseen, so the
// listing goes stale. A waiter therefore watches its predecessor P and P's
// predecessor PP (Exclusive). When PP goes, the kept listing decides the
// next step — off the critical path, while P holds or waits: usually it
// shows P first, and then, when P is deleted, the handoff costs no
// request. When it names a node ahead of P, the waiter watches that one;
// if it has left unseen, setting the watch says so (NoNode) and a fresh
// listing decides — one request, rather than one per stale node. A waiter
// that keeps only part of the queue ahead of it (Window) lists again
// after any deletion that does not make it the holder. A release wakes at
// most two waiters, and in a long queue costs a listing of the directory
// by the one that moves up to third place, not by the next holder.
//
// The first listing. It is sent right behind the create, before the
// answer, on the same connection (connection.CreateProtectedThen), so the
// two cost one round trip; it is used only if it names our node — then it
// was taken after our create applied. When a listing that names our node
// says ours holds, the hold is handed out at once and takes our node's
// watch, sent then, when it is answered (Acquired.OwnSoon, NewHold): our
// node was there at the listing, and the watch, processed after it,
// either is set on that node or finds it gone — which ends the hold as
// the watch's firing would have.
//
// Our own node. A deletion seen in our kept listing may be an operator's
// (a deleteall of the directory), not a release, and our own node may have
// gone before it. So the waiter watches its own node too, set before it
// waits, and never holds once that watch has fired: the client hears a
// session's watch events in the order of the changes, and
// connection.Watch fires in that order, so when a predecessor's deletion
// is seen, an earlier deletion of our node has been seen already. A node
// of ours deleted later ends the hold (NewHold), as a lost session does.
//
// The watches of a listing, in one request. The watches a listing asks
// for — our own node's the first time, and the predicate's (P and PP) —
// are set together, right after it, with one setWatches at the listing's
// zxid (connection.WatchData), where one read each would cost three
// requests: a contended handoff costs five requests instead of seven. The
// zxid is the directory's pzxid in the listing's Stat, the zxid of the
// last child created or deleted before the listing, no newer than the
// listing. ZooKeeper (DataTree.setWatches, 3.8) then fires at once the
// watch of a node that is missing (NodeDeleted) or whose data changed
// after that zxid (NodeDataChanged), and registers the others, which fire
// at their next change as a read's watch would. Why nothing is lost:
//
//   - No missed release. Every node watched was in the listing, so it
//     existed at its zxid. Deleted before the setWatches is handled: it is
//     missing, and its watch fires NodeDeleted then. Deleted after: its
//     watch was registered, and fires. The server handles the setWatches
//     atomically with respect to writes (its CommitProcessor runs no read
//     beside a write), so there is no moment in between. A setWatches
//     that reaches another server of the ensemble after a reconnect meets
//     a tree at least as new as the listing (the handshake refuses a
//     server behind the newest zxid the client has seen): missing there
//     is deleted since.
//     A watch the session already has pending on a node (another
//     participant of the client waits on it too) is shared, not set
//     again (WatchData): it was set while the node existed, and fires at
//     its deletion whenever that comes.
//   - No two holders. A NodeDeleted fired by the setWatches is a node
//     that is gone, so removing it from the kept listing keeps it a
//     superset of the contenders ahead; the 0-RTT argument above holds
//     unchanged.
//   - Our own node's deletion is seen first. The server sends the events
//     the setWatches fires ahead of its answer, and the client fires
//     Watches in the order it reads events; the waiter looks at none of
//     its watches before the answer is read. So a deletion of our node
//     before the request has fired our node's watch by the time the waiter
//     sees any deletion the request reports — and our node is the first
//     path of the request besides, so that even its events come in that
//     order. A shared watch was set before the request: a deletion of
//     its node before the request was reported when it happened, ahead
//     of the request's events. One after the request is reported in the
//     order of the changes, as a read's watch's would be. So, as with reads, a waiter
//     that sees a predecessor go has already seen its own node go, if it
//     went first.
//   - The own node's watch still ends a hold whose node is deleted: it is
//     the hold's Own, as a read's watch was.
//   - A lost answer. The request is one attempt on one connection: a
//     connection lost before its answer fails it, its watches are dropped
//     (the server forgot them with the connection), and the waiter sets
//     them one read at a time instead (GetWatch, retried within the
//     session, NoNode asking for a listing as before). Once answered, the
//     watches are the client's own, and after a reconnect of the same
//     session the client registers them again itself, at a zxid no newer
//     than the last it heard while every watch was registered
//     (internal/wire's restore.go): a node deleted while it was cut off fires
//     NodeDeleted then.
//   - No other session. The request goes only in the session that made
//     our node (WatchData refuses any other: ErrSessionLost restarts the
//     attempt), the watches belong to that session's handle, and they end
//     with it (EventNotWatching), which restarts a waiter and ends a hold.
//   - Data changes. A change of a node's data after the zxid fires its
//     watch (NodeDataChanged) as a read's watch would. A change before it
//     that the pzxid is older than fires it too, at once: a spurious
//     wake-up. The waiter then sets that watch again with a read (GetWatch;
//     our own node's too, after a fresh listing), so a node written since
//     its last child change cannot make it spin.
//     A shared watch set after the listing does not report a change of
//     data between the two; nothing rests on one while waiting (a
//     revocation is read by the hold itself, Hold.watchRevocation).
//
// Watches that do not follow a fresh listing (after a deletion or a
// change seen in the kept listing) are set with a read each: there is no
// zxid to set them at.
//
// It also relies on no node being inserted ahead of ours after our
// listing: a queue where that can happen (a read/write lock's downgrade)
// sets Relist, and a waiter then lists again after every deletion, as
// Curator does.
func (l *Lock) await(ctx context.Context, t *attempt) error {
	w, a := &t.w, t.a
	next, names, listed, ownByRead := t.next, t.names, t.listed, t.ownByRead
	var err error
	if first := t.first; first != nil {
		t.first = nil
		if next == stepList {
			if children, stat := first.names(ctx, w.ours); children != nil {
				next, names = w.listed(children)
				listed = max(stat.Pzxid, 1)
			}
		}
	}
	for {
		switch next {
		case stepHeld:
			if w.own == nil && !l.Line {
				if listed > 0 {
					// Held at a listing that names our node: the hold takes
					// the node's watch when it is answered (NewHold), and
					// the lock is held without waiting for it.
					a.OwnSoon = l.watchOwnSoon(ctx, a.Path)
					held, err := l.confirm(ctx, a)
					if err != nil {
						a.OwnSoon.cancel()
						return err
					}
					t.a = held
					return nil
				}
				// Held without a listing (the directory's first node):
				// the node's watch is all that is left to set.
				if err := l.watchOwn(ctx, w, a.Path); err != nil {
					return err
				}
			}
			if w.ownGone() {
				return errRestart
			}
			a.Own = w.own
			held, err := l.confirm(ctx, a)
			if err != nil {
				return err // t.a is still the node, for giveUp
			}
			t.a = held
			return nil
		case stepRestart:
			return errRestart // our node is gone
		case stepList:
			next, names, listed, err = l.list(ctx, w)
		case stepWatch:
			if !t.wait {
				return ErrWouldWait
			}
			next, err = l.watch(ctx, w, a, names, listed, ownByRead)
			listed = 0
			if err == nil && next == stepWatch {
				t.names, t.listed, t.ownByRead = nil, 0, ownByRead
				return errPark
			}
		}
		if err != nil {
			return err
		}
	}
}

// list lists the directory again for w, and returns the zxid to set the
// watches it asks for at (see await): the directory's pzxid.
func (l *Lock) list(ctx context.Context, w *waiter) (step, []string, int64, error) {
	children, stat, err := l.Client.Children(ctx, l.Dir)
	if errors.Is(err, zk.ErrNoNode) {
		// The directory is gone, and our node with it (deleted by someone
		// else, and then the emptied container by the server).
		err = errRestart
	}
	if err := restartOn(err); err != nil {
		return 0, nil, 0, err
	}
	next, names := w.listed(children)
	return next, names, max(stat.Pzxid, 1), nil
}

// watchOwn sets w's watch on our own node with a read; a node already
// gone restarts.
func (l *Lock) watchOwn(ctx context.Context, w *waiter, own string) error {
	_, _, watch, err := l.Client.GetWatch(ctx, own)
	if errors.Is(err, zk.ErrNoNode) {
		return errRestart
	}
	if err != nil {
		return restartOn(err)
	}
	w.own = watch
	return nil
}

// watch sets w's watches on names and, if it has none yet, on our own
// node (a's). After a listing (listed, its zxid) they go in one
// setWatches, our node's first (see await); otherwise, or if that
// request's connection failed, with a read each, our node's first, and a
// node found gone asks for a listing. ownByRead sets our node's with a
// read in any case.
func (l *Lock) watch(ctx context.Context, w *waiter, a Acquired, names []string, listed int64, ownByRead bool) (step, error) {
	own := w.own == nil && !l.Line
	if own && ownByRead {
		if err := l.watchOwn(ctx, w, a.Path); err != nil {
			return 0, err
		}
		own = false
	}
	if listed > 0 && (own || len(names) > 0) {
		paths := make([]string, 0, len(names)+1)
		if own {
			paths = append(paths, a.Path)
		}
		for _, name := range names {
			paths = append(paths, path.Join(l.Dir, name))
		}
		ws, err := connx.Of(l.Client).WatchData(ctx, a.Session, listed, paths)
		switch {
		case err == nil:
			if own {
				w.own, ws = ws[0], ws[1:]
			}
			for i, name := range names {
				w.watched(name, ws[i])
			}
			return stepWatch, nil
		case errors.Is(err, connection.ErrSessionLost), ctx.Err() != nil, errors.Is(err, connection.ErrClosed):
			return 0, restartOn(err)
		}
		// Its connection failed before the answer: a read each, which
		// waits for the connection and is retried within the session.
	}
	if own {
		if err := l.watchOwn(ctx, w, a.Path); err != nil {
			return 0, err
		}
	}
	for _, name := range names {
		_, _, watch, err := l.Client.GetWatch(ctx, path.Join(l.Dir, name))
		if errors.Is(err, zk.ErrNoNode) {
			return w.missing(), nil
		}
		if err := restartOn(err); err != nil {
			return 0, err
		}
		w.watched(name, watch)
	}
	return stepWatch, nil
}

// confirm is the last step before a hold is reported: the session that
// owns the node must still be trusted. While it is suspended (standard
// policy) the node, if the session lives, is still ours and still first —
// nodes ahead of it can only leave — so confirm waits for the session to
// be trusted again; if the session ends, the attempt restarts. Without it
// Lock could return a hold whose Done is already closed.
func (l *Lock) confirm(ctx context.Context, a Acquired) (Acquired, error) {
	a, err := Confirm(ctx, l.Client, a)
	if errors.Is(err, ErrNodeGone) {
		return Acquired{}, errRestart
	}
	return a, restartOn(err)
}

// Confirm waits until a's session is trusted and records that period in
// a.Trusted (see Lock.await). It fails with an error wrapping
// connection.ErrSessionLost when the session ends first, or ctx's error.
//
// It also makes sure a hold never starts on a spent watch of its node
// (a.Own): a watch that fired for a change of the node's data (a
// revocation, an operator's write) says nothing of a deletion after it, so
// the node is read again with a new watch; a watch that fired for the
// node's deletion, or a node found gone, fails with ErrNodeGone.
func Confirm(ctx context.Context, c *connection.Client, a Acquired) (Acquired, error) {
	if a.Own != nil {
		select {
		case <-a.Own.Done():
			if ev := a.Own.Event(); ev.Type != zk.EventNodeDataChanged {
				return Acquired{}, errtext.Errorf("%w: %s (%v)", ErrNodeGone, a.Path, ev.Type)
			}
			_, _, own, err := c.GetWatch(ctx, a.Path)
			if errors.Is(err, zk.ErrNoNode) {
				return Acquired{}, errtext.Errorf("%w: %s", ErrNodeGone, a.Path)
			}
			if err != nil {
				return Acquired{}, err
			}
			a.Own = own
		default:
		}
	}
	period, err := a.Session.Trusted(ctx)
	if err != nil {
		return Acquired{}, err
	}
	a.Trusted = period
	return a, nil
}

// ErrNodeGone means the node of a hold was deleted by someone else (or,
// heard as a deletion, with its session): a hold about to begin has
// nothing to hold, and a hold's context has it in its cause when it ended
// so. It is connection.ErrNodeDeleted, the sentinel a recipe's caller
// matches: lockcore is not a package the caller knows.
var ErrNodeGone = connection.ErrNodeDeleted

// restartOn turns a lost session into errRestart and passes other errors.
func restartOn(err error) error {
	if errors.Is(err, connection.ErrSessionLost) {
		return errRestart
	}
	return err
}

func removeName(cs []Contender, name string) []Contender {
	if i := Index(cs, name); i >= 0 {
		return append(cs[:i:i], cs[i+1:]...)
	}
	return cs
}
