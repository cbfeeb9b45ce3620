package lockcore

import (
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// waiter is the decision logic of one contender's wait, without I/O: it
// keeps the listing it last saw, shrunk as deletions are seen, and the
// names it watches, and after each thing that happens it says what to do
// next. Lock.await performs the actions; wait_test.go drives it through
// sequences of events without a server.
//
// See Lock.await for why a kept listing may decide a hold (the 0-RTT
// handoff) and when it must not (Relist).
type waiter struct {
	ours     string
	pred     Predicate
	accept   func(layout.Kind) bool
	relist   bool
	window   int   // see Lock.Window; 0 keeps every contender ahead
	line     bool  // see Lock.Line: a deleted predecessor makes ours first (deleted)
	partial  bool  // cs[0] stands in for contenders ahead that were not kept
	ahead    int32 // the contenders ahead of ours at the last listing, kept or not
	cs       []layout.Contender
	watching []watching        // the watches set and not fired: a few at most
	own      *connection.Watch // on our own node, from the first listing on; nil in tests without a server
}

// watching is a watch the waiter set; w is nil in tests without a server.
type watching struct {
	name string
	w    *connection.Watch
}

// step is what the waiter asks for next.
type step int

const (
	stepHeld    step = iota // ours holds: confirm the session and report the hold
	stepWatch               // set watches on the names given (possibly none), then wait for one
	stepList                // list the directory again, then call listed
	stepRestart             // our node is gone: start over with a new node
)

func (s step) String() string {
	return [...]string{"held", "watch", "list", "restart"}[s]
}

func newWaiter(ours string, pred Predicate, accept func(layout.Kind) bool, relist bool, window int) *waiter {
	return &waiter{ours: ours, pred: pred, accept: accept, relist: relist, window: window}
}

// created says what to do first once ours is made: list the directory,
// unless ours is the directory's first child ever. Its sequence number is
// the directory's count of child creations when it was made (the parent's
// cversion as the server keeps it; deletes do not count): 0 means no node
// was ever in it before ours, so none is ahead of ours, and every later
// node sorts behind it or, numbered at the limit, never holds (see
// layout.Exhausted and Lock.admit) — ours holds, and the listing is a request
// saved. A lock directory is a container, made again after it was emptied
// and deleted: a key locked for the first time, or again after a while, is
// taken with a create alone. A queue where nodes may be inserted ahead
// (Relist) lists all the same.
func (w *waiter) created() step {
	if c, ok := layout.Parse(w.ours); ok && c.N == 0 && !w.relist {
		return stepHeld
	}
	return stepList
}

// listed takes a fresh listing of the directory. It keeps the contenders
// up to ours only: predicates look at those ahead of ours, and a waiter
// deep in a long queue should not hold the names of everyone behind it.
// With a window it keeps only the window's contenders right ahead of ours
// and, when there are more, the nearest of the others as a stand-in for
// all of them: then ours is not first, and the predicate asks for no
// watch beyond the window, so it decides as it would on the whole
// listing. A deletion never makes a kept listing with a stand-in hold:
// after any deletion that does not make ours hold, such a waiter lists
// again (see deleted).
func (w *waiter) listed(children []string) (step, []string) {
	keep := 0
	if w.window > 0 {
		keep = w.window + 1
	}
	var n int
	w.cs, n, _ = ahead(children, w.accept, w.ours, keep)
	w.partial, w.ahead = keep > 0 && n > keep, int32(n)
	detach(w.cs, w.ours)
	// A watched node no longer in the listing has left: its event is on
	// its way, and nobody needs it.
	w.watching = slices.DeleteFunc(w.watching, func(x watching) bool { return layout.Index(w.cs, x.name) < 0 })
	return w.decide()
}

// detach gives the kept contenders names of their own: ours the
// waiter's own string, the others one string together. As substrings of
// the listing's names, which the client decodes one allocation after
// another, three kept of a hundred would keep the spans of the hundred in
// use for as long as the waiter waits (with 10,000 idle waiters, more
// than half the heap they held was such spans).
func detach(cs []layout.Contender, ours string) {
	n := 0
	for _, c := range cs {
		if c.Name != ours {
			n += len(c.Name)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, c := range cs {
		if c.Name != ours {
			b.WriteString(c.Name)
		}
	}
	all, at := b.String(), 0
	for i, c := range cs {
		if c.Name == ours {
			// Ours is the waiter's own string, not the listing's.
			cs[i].Name, cs[i].Seq = ours, ours[len(ours)-len(c.Seq):]
			continue
		}
		name := all[at : at+len(c.Name)]
		at += len(c.Name)
		cs[i].Name, cs[i].Seq = name, name[len(name)-len(c.Seq):]
	}
}

// decide evaluates the predicate on the kept listing.
func (w *waiter) decide() (step, []string) {
	i := layout.Index(w.cs, w.ours)
	if i < 0 {
		return stepRestart, nil
	}
	held, watch := w.pred(w.cs, i)
	if held {
		return stepHeld, nil
	}
	var names []string
	for _, j := range watch {
		if name := w.cs[j].Name; !w.isWatching(name) {
			names = append(names, name)
		}
	}
	return stepWatch, names
}

// watched records the watch set on name.
func (w *waiter) watched(name string, watch *connection.Watch) {
	w.watching = append(w.watching, watching{name, watch})
}

func (w *waiter) isWatching(name string) bool {
	return slices.ContainsFunc(w.watching, func(x watching) bool { return x.name == name })
}

func (w *waiter) forget(name string) {
	w.watching = slices.DeleteFunc(w.watching, func(x watching) bool { return x.name == name })
}

// missing: setting a watch found its node already gone. The listing is
// stale; one fresh listing answers for every node that left unseen.
func (w *waiter) missing() step { return stepList }

// ownGone reports whether our own node's watch fired for its deletion or
// the end of its session: the node is gone, and must not hold. (A change
// of its data fires it too; ownFired says what to do then.)
func (w *waiter) ownGone() bool {
	if w.own == nil || !connx.Fired(w.own) {
		return false
	}
	return w.own.Event().Type != zk.EventNodeDataChanged
}

// ownFired: our own node's watch fired. Deleted, or its session over: the
// attempt restarts with a new node. Its data changed (a revocation asked
// of a waiter): the watch is set again with the next listing.
func (w *waiter) ownFired() step {
	if w.ownGone() {
		return stepRestart
	}
	w.own = nil
	return stepList
}

// deleted: a watched node was deleted. The kept listing is a superset of
// the contenders really ahead (they can only leave; a newer node sorts
// behind ours). If ours now holds against it, it holds without another
// request (the 0-RTT handoff); if not, the predicate's watches on it are
// right too — a node among them that has left unseen answers the watch
// with NoNode, and then a listing decides — so the waiter waits on without
// listing: in a long queue the second in line, whose predecessor's
// predecessor was the holder, costs the servers no read per handoff. It
// lists again instead when nodes may be inserted ahead (relist) or when a
// stand-in holds the place of contenders it did not keep (the window).
func (w *waiter) deleted(name string) (step, []string) {
	w.forget(name)
	w.cs = removeName(w.cs, name)
	if w.relist {
		return stepList, nil
	}
	if w.line {
		// A line (Lock.Line) watches its predecessor alone, and its places
		// leave in turn: a place leaves once it is first. So when ours
		// hears its predecessor go, every contender it kept ahead of that
		// one has left unseen, and ours is first without a listing —
		// where a lock would set a watch on the nearest of them (NoNode)
		// and list, two requests on the line's path at every move. The
		// guess is wrong only when the predecessor left out of turn (its
		// wait cancelled, its session ended) while one ahead of it still
		// waits or is first: then two places act as first for a while,
		// which in a line costs requests and breaks nothing — what it
		// orders is decided elsewhere (a queue's taken nodes).
		if i := layout.Index(w.cs, w.ours); i >= 0 {
			w.cs, w.partial = w.cs[i:], false
			w.watching = w.watching[:0]
			return stepHeld, nil
		}
	}
	if i := layout.Index(w.cs, w.ours); i >= 0 {
		if held, _ := w.pred(w.cs, i); held {
			if w.ownGone() {
				// Our node went first (an operator's deleteall, say): the
				// deletion we saw is no turn of ours.
				return stepRestart, nil
			}
			return stepHeld, nil
		}
	}
	if w.partial {
		return stepList, nil
	}
	return w.decide()
}

// changed: a watched node changed but is still there; watch it again.
func (w *waiter) changed(name string) (step, []string) {
	w.forget(name)
	return w.decide()
}
