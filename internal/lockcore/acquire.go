package lockcore

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// ErrWouldWait is returned by Acquire without waiting when another
// contender holds the lock.
var ErrWouldWait = errors.New("lockcore: held by another contender")

// Lock describes one contender's way into a lock directory.
type Lock struct {
	Client    *connection.Client
	Dir       string                 // the lock directory, e.g. "/locks/orders"
	Name      string                 // node name before the GUID's end and the sequence, e.g. "lock-"
	Data      []byte                 // the node's data
	Accept    func(layout.Kind) bool // which children are contenders
	Predicate Predicate              // who holds
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
	// Parked, if not nil, is called in place of telling the observer when
	// a contender first parks, with its node and the contenders ahead of
	// it; it returns the context the wait goes on with (ctx or derived
	// from it). A recipe whose wait is more than its place in this line
	// (a work queue's worker, waiting for an item) tells its own.
	Parked func(ctx context.Context, node string, ahead int) context.Context
}

// Acquire creates a node and waits until it holds the lock, ctx is done,
// or (when wait is false) another contender holds it (ErrWouldWait). On
// any failure its node is deleted. If the session is lost while waiting,
// it starts again in the next session, at the back of the queue.
//
// An idle waiter is its caller's goroutine, parked in park, and its
// attempt. The garbage collector shrinks a goroutine's stack only when
// little of it is in use, so the frames a waiter parks under are kept few
// and small: Acquire's loop calls park itself, between the steps of
// await, whose state waits in the attempt — not in await's frame, which is
// left.
//
// The observer, if any, is told of the wait when the contender first
// parks, and of its end as Acquire returns (waitBegins).
func (l *Lock) Acquire(ctx context.Context, wait bool) (Acquired, error) {
	var (
		obs   *WaitObs
		begun bool
	)
	for {
		t, err := l.create(ctx, wait)
		if err != nil {
			if errors.Is(err, connection.ErrSessionLost) && ctx.Err() == nil {
				continue // CreateProtected waits for the next session
			}
			return Acquired{}, obs.End(err)
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
			obs.End(nil)
			return t.a, nil
		}
		if err = l.giveUp(ctx, t, err); err != nil {
			return Acquired{}, obs.End(err)
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
		a:    Acquired{Path: created.Path, Session: created.Session, Token: created.Czxid, Unique: true},
		wait: wait, first: first,
		w: waiter{ours: path.Base(created.Path), pred: l.Predicate, accept: l.Accept, relist: l.Relist, window: l.Window, line: l.Line},
	}
	t.next = t.w.created()
	return t, nil
}

// giveUp deletes the node of an attempt that failed with err, and returns
// nil to start again with a new node, or the error to return.
func (l *Lock) giveUp(ctx context.Context, t *attempt, err error) error {
	Abandon(l.Client, t.a)
	_, err = Restarting(ctx, err)
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
// returns nil with the hold in t.a, ErrRestart to start again with a new
// node, or errPark when it waits for a watch (Acquire parks, then calls
// await again).
//
// Its safety rests on one invariant: the waiter's kept listing holds every
// contender ahead of our node, and maybe some that have left. A listing
// that names our node was taken after our create applied, and nodes
// created later sort after ours (a directory's sequence numbers only grow,
// and it cannot be deleted and recreated while our node is in it), so
// contenders ahead can only leave; a name is removed only when a watch
// reports its deletion. Predicates are monotone, so holding against that
// superset is holding (the 0-RTT handoff, waiter.deleted). A queue where a
// node can be inserted ahead of ours after the listing sets Relist, and
// lists again after every deletion.
//
// A deletion may be an operator's (a deleteall), not a release, and our
// node may have gone before it. So our node's watch is set before the
// waiter waits, and it never holds once that watch has fired: the client
// fires a session's watches in the order of the changes, so an earlier
// deletion of our node is seen before a predecessor's.
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
					// Held at a listing that names our node: the node was
					// there then, and its watch, sent now and processed
					// after the listing, is either set on it or finds it
					// gone, which ends the hold as the watch's firing
					// would (Acquired.OwnSoon, NewHold). The lock is held
					// without waiting for the answer.
					a.OwnSoon = l.watchOwnSoon(ctx, a)
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
				if err := l.watchOwn(ctx, w, a); err != nil {
					return err
				}
			}
			if w.ownGone() {
				return ErrRestart
			}
			a.Own = w.own
			held, err := l.confirm(ctx, a)
			if err != nil {
				return err // t.a is still the node, for giveUp
			}
			t.a = held
			return nil
		case stepRestart:
			return ErrRestart // our node is gone
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
// watches it asks for at (see watch): the directory's pzxid.
func (l *Lock) list(ctx context.Context, w *waiter) (step, []string, int64, error) {
	children, stat, err := l.Client.Children(ctx, l.Dir)
	if errors.Is(err, zk.ErrNoNode) {
		// The directory is gone, and our node with it (deleted by someone
		// else, and then the emptied container by the server).
		err = ErrRestart
	}
	if err := RestartOn(err); err != nil {
		return 0, nil, 0, err
	}
	next, names := w.listed(children)
	return next, names, max(stat.Pzxid, 1), nil
}

// watchOwn sets w's watch on our own node (a's) with a read; a node
// already gone, or made again at its path by someone else (another czxid
// than a.Token), restarts.
func (l *Lock) watchOwn(ctx context.Context, w *waiter, a Acquired) error {
	watch, err := WatchOwn(ctx, l.Client, a.Path, a.Token)
	if errors.Is(err, ErrNodeGone) {
		return ErrRestart
	}
	if err != nil {
		return RestartOn(err)
	}
	w.own = watch
	return nil
}

// watch sets w's watches on names and, if it has none yet, on our own
// node (a's); a node found gone asks for a listing. ownByRead sets our
// node's with a read in any case: its watch fired for a change of its
// data, which a setWatches at the listing's zxid would report again at
// once, so that a node written since its last child change would make
// the waiter spin.
//
// After a listing (listed, its zxid: the directory's pzxid, no newer than
// the listing) the watches go in one setWatches at that zxid, our node's
// first; otherwise there is no zxid to set them at, and they are set with
// a read each. Why the setWatches misses nothing:
//   - The server handles it atomically with respect to writes, firing at
//     once NodeDeleted for a watched node already missing and
//     NodeDataChanged for one written since the zxid, and registering the
//     others. Every watched node was in the listing, so a deletion before
//     or after the request is seen, and a NodeDeleted it fires is of a
//     node that is gone, so removing it keeps the superset (see await).
//     One fired for data written before the zxid is a spurious wake-up,
//     and that watch is set again with a read. (A shared watch set after
//     the listing does not report data written between the two; nothing
//     rests on one while waiting: the hold reads its revocation itself.)
//     A server reached after a reconnect is at least as new as the listing
//     (the handshake refuses one behind the client's newest zxid).
//   - Our node's deletion is seen before any predecessor's: the server
//     sends the events it fires ahead of its answer, in the order of the
//     request's paths, and the client fires watches in the order it reads
//     events. A watch the session already has on a node is shared
//     (WatchData): it was set while the node existed, and its events come
//     in the order of the changes, as a read's would.
//   - It goes only in our node's session (WatchData refuses another:
//     ErrSessionLost restarts the attempt). A connection lost before the
//     answer dropped its watches with it; they are set one read at a time
//     instead. Once answered, the client registers them again after a
//     reconnect of the same session (internal/wire's restore.go).
func (l *Lock) watch(ctx context.Context, w *waiter, a Acquired, names []string, listed int64, ownByRead bool) (step, error) {
	own := w.own == nil && !l.Line
	if own && ownByRead {
		if err := l.watchOwn(ctx, w, a); err != nil {
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
			return 0, RestartOn(err)
		}
		// Its connection failed before the answer: a read each, which
		// waits for the connection and is retried within the session.
	}
	if own {
		if err := l.watchOwn(ctx, w, a); err != nil {
			return 0, err
		}
	}
	for _, name := range names {
		_, _, watch, err := l.Client.GetWatch(ctx, path.Join(l.Dir, name))
		if errors.Is(err, zk.ErrNoNode) {
			return w.missing(), nil
		}
		if err := RestartOn(err); err != nil {
			return 0, err
		}
		w.watched(name, watch)
	}
	return stepWatch, nil
}

func removeName(cs []layout.Contender, name string) []layout.Contender {
	if i := layout.Index(cs, name); i >= 0 {
		return append(cs[:i:i], cs[i+1:]...)
	}
	return cs
}
