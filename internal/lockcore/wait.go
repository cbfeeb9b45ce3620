package lockcore

import "slices"

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
	accept   func(Kind) bool
	relist   bool
	window   int // see Lock.Window; 0 keeps every contender ahead
	cs       []Contender
	watching map[string]bool
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

func newWaiter(ours string, pred Predicate, accept func(Kind) bool, relist bool, window int) *waiter {
	return &waiter{ours: ours, pred: pred, accept: accept, relist: relist, window: window, watching: map[string]bool{}}
}

// listed takes a fresh listing of the directory. It keeps the contenders
// up to ours only: predicates look at those ahead of ours, and a waiter
// deep in a long queue should not hold the names of everyone behind it.
// With a window it keeps only the window's contenders right ahead of ours
// and, when there are more, the nearest of the others as a stand-in for
// all of them: then ours is not first, and the predicate asks for no
// watch beyond the window, so it decides as it would on the whole
// listing. A deletion never makes a kept listing with a stand-in hold:
// the waiter lists again, as it does for any deletion that does not.
func (w *waiter) listed(children []string) (step, []string) {
	w.cs = Sort(children, w.accept)
	if i := Index(w.cs, w.ours); i >= 0 {
		switch {
		case w.window > 0 && i > w.window+1:
			w.cs = slices.Clone(w.cs[i-w.window-1 : i+1])
		case i+1 < len(w.cs):
			w.cs = slices.Clone(w.cs[:i+1])
		}
	}
	for name := range w.watching {
		if Index(w.cs, name) < 0 {
			delete(w.watching, name) // its event is on its way; nobody needs it
		}
	}
	return w.decide()
}

// decide evaluates the predicate on the kept listing.
func (w *waiter) decide() (step, []string) {
	i := Index(w.cs, w.ours)
	if i < 0 {
		return stepRestart, nil
	}
	held, watch := w.pred(w.cs, i)
	if held {
		return stepHeld, nil
	}
	var names []string
	for _, j := range watch {
		if name := w.cs[j].Name; !w.watching[name] {
			names = append(names, name)
		}
	}
	return stepWatch, names
}

// watched records that a watch on name is set.
func (w *waiter) watched(name string) { w.watching[name] = true }

// missing: setting a watch found its node already gone. The listing is
// stale; one fresh listing answers for every node that left unseen.
func (w *waiter) missing() step { return stepList }

// deleted: a watched node was deleted. If ours now holds against the kept
// listing — a superset of the contenders really ahead — it holds without
// another request (the 0-RTT handoff), unless nodes may be inserted ahead
// (relist); otherwise list again.
func (w *waiter) deleted(name string) (step, []string) {
	delete(w.watching, name)
	w.cs = removeName(w.cs, name)
	if i := Index(w.cs, w.ours); i >= 0 && !w.relist {
		if held, _ := w.pred(w.cs, i); held {
			return stepHeld, nil
		}
	}
	return stepList, nil
}

// changed: a watched node changed but is still there; watch it again.
func (w *waiter) changed(name string) (step, []string) {
	delete(w.watching, name)
	return w.decide()
}
