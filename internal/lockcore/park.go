package lockcore

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// park waits for one of the attempt's watches (its own node's among
// them) to fire, the session's end or ctx, and tells the waiter what
// fired (woke): await goes on from there. A watch a wait gives up on
// stays pending until its node changes (see connection.Watch); it is
// shared, so giving up and waiting again adds none.
//
// A waiter idles here, and costs what it waits with. The attempt is the
// Hook of each of its watches while it parks, and a watch that fires
// sends on the attempt's one wake channel: the select waits on three
// channels, whatever the number of watches, and the watches make none,
// rather than a channel and a runtime waiting record per watch. After a wake, the watches are
// looked at in order, our own node's first, so that a deletion of our
// node is seen before any later event (see await); a wake with nothing
// fired (a hook's send left from an earlier park) waits again. The
// waiter's frames, and its callers', are what its goroutine's stack
// holds: the select is here, not in a function of its own, and what
// follows a wake is in woke.
func (t *attempt) park(ctx context.Context) error {
	if t.wake == nil {
		t.wake = make(chan struct{}, 1)
	}
	for {
		if i, ok := t.fired(); ok {
			t.woke(i)
			return nil
		}
		t.hooks(true)
		select {
		case <-t.wake:
		case <-t.a.Session.Done():
			t.hooks(false)
			return ErrRestart
		case <-ctx.Done():
			t.hooks(false)
			return ctx.Err()
		}
		t.hooks(false)
	}
}

// fired returns the first of the attempt's watches that fired: our own
// node's (-1), then those of w.watching in order.
func (t *attempt) fired() (int, bool) {
	w := &t.w
	if w.own != nil && connx.Fired(w.own) {
		return -1, true
	}
	for i, x := range w.watching {
		if connx.Fired(x.w) {
			return i, true
		}
	}
	return 0, false
}

// hooks makes the attempt the Hook of its watches (on), or no longer. A
// watch that fired already calls WatchFired at once.
func (t *attempt) hooks(on bool) {
	w := &t.w
	if w.own != nil {
		if on {
			connx.AddHook(w.own, t)
		} else {
			connx.RemoveHook(w.own, t)
		}
	}
	for _, x := range w.watching {
		if on {
			connx.AddHook(x.w, t)
		} else {
			connx.RemoveHook(x.w, t)
		}
	}
}

// WatchFired wakes park: the attempt is the Hook of its watches while it
// parks. It runs on go-zookeeper's receive loop, and never blocks: a wake
// already pending says it all.
func (t *attempt) WatchFired(*connection.Watch, zk.Event) {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// woke tells the waiter that its watch i fired (-1: our own node's), and
// sets where await goes on from.
//
//go:noinline
func (t *attempt) woke(i int) {
	w := &t.w
	var (
		next  step
		names []string
	)
	switch {
	case i < 0:
		next = w.ownFired()
	case w.watching[i].w.Event().Type == zk.EventNotWatching:
		next = stepRestart // the session ended
	case w.watching[i].w.Event().Type == zk.EventNodeDeleted:
		next, names = w.deleted(w.watching[i].name)
	default:
		next, names = w.changed(w.watching[i].name)
	}
	t.next, t.names = next, names
	t.ownByRead = t.ownByRead || next == stepList && w.own == nil && !w.line
}
