package barrier

import (
	"context"
	"errors"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Leave makes the member leave and blocks until every member has left:
// until none of the members that were in the barrier when it began to
// leave is left. Members that arrive while it leaves are not waited for
// (they belong to the next round, or came late to this one).
//
// It follows the recipe's order, as Curator's and Kazoo's members do, so
// that a release wakes one or two members: the lowest member (by name)
// waits for the highest to go and deletes its node last, when it is
// alone; every other member deletes its node at once and waits for the
// lowest to go. Every wake-up is checked by listing the members again: a
// member passes only when the listing shows that the members it waits for
// are gone, never on a wake-up alone. (Curator's leave passed a member
// whose node was deleted as soon as one node was left, which a wake-up of
// the enter watch could bring about while the lowest member was still
// inside.) Once every member has left, it deletes the ready node it
// entered by, as Curator's members do, so that the next round starts
// closed.
//
// Leave always takes the member out of the barrier. When ctx ends first,
// the error wraps ctx.Err(), and the member's node, if it was still there,
// is deleted before Leave returns (in the background if the servers do not
// answer): the member has left without waiting for the others. When the
// member's node goes before it deleted it — its session ends, or another
// client deletes it — the error wraps ErrMemberLost (and
// connection.ErrSessionLost for the first): the others no longer wait for
// it. Once its node is deleted, waiting for the others needs only reads,
// which go on in the client's next session if this one ends. On a member
// that is not in the barrier, Leave fails with ErrNotEntered.
func (d *Double) Leave(ctx context.Context) error {
	if err := d.take(ctx); err != nil {
		return errtext.Errorf("barrier: leave %s: %w", d.path, err)
	}
	defer d.give()
	d.mu.Lock()
	m, czxid := d.in, d.readyCzxid
	d.mu.Unlock()
	if m == nil {
		return errtext.Errorf("barrier: leave %s: %w", d.path, ErrNotEntered)
	}
	err := d.leave(ctx, m, czxid)
	d.mu.Lock()
	d.in, d.readyCzxid = nil, 0
	d.mu.Unlock()
	if err != nil {
		return errtext.Errorf("barrier: leave %s: %w", d.path, err)
	}
	return nil
}

// leave runs the leave rule (nextLeaveStep) for m until it is done; m's
// node is deleted when it returns, by it or in the background.
//
// Its wait is told to the client's observer as one of Recipe
// "doublebarrier" when it first has to wait, with m's node and, as Ahead,
// the other members it still waits for; it ends as leave returns.
func (d *Double) leave(ctx context.Context, m *member, readyCzxid int64) (err error) {
	var obs waitObs
	defer func() { obs.end(err) }()
	sess := m.Session
	// Reads pinned to m's session: once it is lost, a read waiting for the
	// client's next session says so instead of waiting.
	pctx := connx.Pin(ctx, sess)
	deleted := false
	defer func() {
		if !deleted && !errors.Is(err, ErrMemberLost) {
			d.abandon(m)
		}
	}()
	if !connx.Of(d.client).Live(sess) {
		return d.lost(m)
	}
	if readyCzxid == 0 {
		// Entered on an event or a listing: the ready node is there until
		// the round's members leave, and m is one of them.
		ok, stat, err := d.client.Exists(pctx, d.ready)
		if err != nil {
			return d.waitErr(ctx, m, err)
		}
		if ok {
			readyCzxid = stat.Czxid
		}
	}
	var waitFor map[string]bool // the members there when m began to leave
	for {
		if !deleted && !connx.Of(d.client).Live(sess) {
			return d.lost(m)
		}
		d.hooks.check()
		children, _, err := d.client.Children(pctx, d.path)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return d.waitErr(ctx, m, err)
		}
		if !deleted && !connx.Of(d.client).Live(sess) {
			return d.lost(m)
		}
		all := members(children)
		if waitFor == nil {
			waitFor = make(map[string]bool, len(all)+1)
			for _, n := range all {
				waitFor[n] = true
			}
			waitFor[m.name] = true
		}
		step := nextLeaveStep(among(all, waitFor), m.name, deleted)
		if step.gone {
			return d.lost(m)
		}
		if step.deleteOwn {
			if err := d.deleteOwn(ctx, m); err != nil {
				return err
			}
			deleted = true
		}
		if step.done {
			d.dropReady(ctx, readyCzxid)
			return nil
		}
		_, _, w, err := d.client.GetWatch(pctx, d.path+"/"+step.watch)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // gone already: list again
		case err != nil:
			return d.waitErr(ctx, m, err)
		}
		var own, sessDone <-chan struct{}
		if !deleted {
			own, sessDone = m.own.Done(), sess.Done()
		}
		if !obs.begun {
			others := len(among(all, waitFor))
			if slices.Contains(all, m.name) {
				others--
			}
			ctx = obs.begin(ctx, d.client, connection.Wait{Recipe: "doublebarrier", Path: d.path, Participant: m.Path, Ahead: others})
			pctx = connx.Pin(ctx, sess)
		}
		select {
		case <-w.Done():
			// Gone, changed, or the watch's session ended: list again.
		case <-own:
			if err := d.rewatchOwn(ctx, m); err != nil {
				return err
			}
		case <-sessDone:
			return d.lost(m)
		case <-d.hooks.wakeUp():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// deleteOwn deletes the member's node, in its session only, and only that
// node. A node gone already (deleted by another client) is left: the
// member is leaving anyway.
func (d *Double) deleteOwn(ctx context.Context, m *member) error {
	err := d.client.DeleteCreated(connx.Pin(ctx, m.Session), m.Path, m.Czxid)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode) && connx.Of(d.client).Live(m.Session):
		return nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, connection.ErrSessionLost):
		return d.lost(m)
	}
	return d.waitErr(ctx, m, err)
}

// dropReady deletes the ready node once every member has left, if it is
// still the one made at czxid (the one the member entered by; 0: not
// known, nothing is deleted). Every member that leaves tries, as in
// Curator, so that one that dies as it leaves does not leave the next
// round open. A failure is only logged: the other members try too.
//
// The node is deleted only if it has that czxid (DeleteCreated, which
// says what its read cannot rule out: the node deleted and the next
// round's made, at the same version, between its read and its delete).
// Curator's members delete ready with no check at all.
func (d *Double) dropReady(ctx context.Context, czxid int64) {
	if czxid == 0 {
		return
	}
	err := d.client.DeleteCreated(ctx, d.ready, czxid)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		connx.Of(d.client).Logger().Warn("barrier: ready node not deleted", "path", d.path, "child", d.ready, "error", err)
	}
}

// Members returns the names of the members in the barrier now, sorted:
// every child of its directory but the ready node (none when the
// directory does not exist).
func (d *Double) Members(ctx context.Context) ([]string, error) {
	children, _, err := d.client.Children(ctx, d.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, errtext.Errorf("barrier: members of %s: %w", d.path, err)
	}
	return members(children), nil
}

// WaitLeft blocks until no member is in the barrier (or ctx ends; the
// error then wraps ctx.Err()). It is the end of a round as seen by a
// process that is not a member, such as one that starts the next round's
// work; a member waits with Leave. It returns at once when the barrier
// has no member.
//
// A WaitLeft that finds members in the barrier is told to the client's
// observer as a wait of Recipe "doublebarrier" with no node of its own
// and, as Ahead, the members it found; it ends as WaitLeft returns.
func (d *Double) WaitLeft(ctx context.Context) (err error) {
	var obs waitObs
	defer func() { obs.end(err) }()
	for {
		d.hooks.check()
		children, _, w, err := d.client.ChildrenWatch(ctx, d.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case err != nil:
			return errtext.Errorf("barrier: wait for the members of %s to leave: %w", d.path, err)
		case len(members(children)) == 0:
			return nil
		}
		if !obs.begun {
			ctx = obs.begin(ctx, d.client, connection.Wait{Recipe: "doublebarrier", Path: d.path, Ahead: len(members(children))})
		}
		select {
		case <-w.Done():
		case <-d.hooks.wakeUp():
		case <-ctx.Done():
			return errtext.Errorf("barrier: wait for the members of %s to leave: %w", d.path, ctx.Err())
		}
	}
}
