package lockcore

import (
	"slices"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Predicate decides, for contenders in queue order and the index of ours,
// whether ours holds. If not, it names the contenders to watch, the one
// whose release matters first, first. Predicates must be monotone: if ours
// holds with some earlier contenders present, it holds with fewer. They
// look only at the contenders ahead of ours: a waiter keeps no listing of
// those behind it.
type Predicate func(cs []layout.Contender, ours int) (held bool, watch []int)

// Shared is the reader's predicate of a read/write lock, Curator's: a
// reader holds when no writer is ahead of it, however many readers are;
// otherwise it watches the first writer (Curator watches the first, not
// the nearest: only the first writer's release can let it in). Monotone:
// with fewer contenders ahead there is no more writer ahead.
func Shared(cs []layout.Contender, ours int) (bool, []int) {
	for i := 0; i < ours; i++ {
		if layout.WriteKinds(cs[i].Kind) {
			return false, []int{i}
		}
	}
	return true, nil
}

// Exclusive is the mutex predicate: the first contender holds. A waiter
// watches its predecessor, and also the predecessor's predecessor, so that
// it already knows when its predecessor became the holder (see Acquire).
func Exclusive(_ []layout.Contender, ours int) (bool, []int) {
	switch {
	case ours == 0:
		return true, nil
	case ours == 1:
		return false, []int{0}
	default:
		return false, []int{ours - 1, ours - 2}
	}
}

// Predecessor is Curator's mutex predicate: the first contender holds, a
// waiter watches only its predecessor. A release wakes one waiter instead
// of Exclusive's two, and the next holder usually lists again first: for
// a queue where wake-ups count for more than handoff latency (a work
// queue's line of idle workers).
func Predecessor(_ []layout.Contender, ours int) (bool, []int) {
	if ours == 0 {
		return true, nil
	}
	return false, []int{ours - 1}
}

// Ahead returns what layout.Sort would return up to and including ours,
// without ordering the contenders behind ours: those accept takes that
// are ahead of ours, in queue order, then ours. With keep > 0 it returns
// only the keep contenders nearest ahead, and more says whether there
// were others. found is false, and cs empty, when ours is not among the
// children. A waiter deep in a long queue lists it often; this costs it a
// parse of each name and no sort of the queue.
func Ahead(children []string, accept func(layout.Kind) bool, ours string, keep int) (cs []layout.Contender, more, found bool) {
	cs, n, found := ahead(children, accept, ours, keep)
	return cs, keep > 0 && n > keep, found
}

// ahead is Ahead that counts the contenders ahead of ours, kept or not.
func ahead(children []string, accept func(layout.Kind) bool, ours string, keep int) (cs []layout.Contender, n int, found bool) {
	me, ok := layout.Parse(ours)
	if !ok || !accept(me.Kind) || !slices.Contains(children, ours) {
		return nil, 0, false
	}
	for _, name := range children {
		c, ok := layout.Parse(name)
		if !ok || !accept(c.Kind) || layout.Compare(c, me) >= 0 {
			continue
		}
		n++
		if keep <= 0 || len(cs) < keep {
			cs = append(cs, c)
			if len(cs) == keep {
				slices.SortFunc(cs, layout.Compare)
			}
			continue
		}
		// cs holds the keep nearest so far, in order: c replaces the
		// farthest of them if it is nearer.
		if layout.Compare(c, cs[0]) > 0 {
			i, _ := slices.BinarySearchFunc(cs, c, layout.Compare)
			copy(cs[0:i-1], cs[1:i])
			cs[i-1] = c
		}
	}
	slices.SortFunc(cs, layout.Compare)
	return append(cs, me), n, true
}
