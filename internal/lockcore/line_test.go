package lockcore

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// TestLineMovesUpWithoutListing: in a line (Lock.Line), a place whose
// predecessor goes is first at once, whatever it kept ahead of that one;
// a lock's waiter with the same listing asks for a request first.
func TestLineMovesUpWithoutListing(t *testing.T) {
	for _, line := range []bool{false, true} {
		for _, children := range [][]string{
			{lk(1), lk(2), lk(3)},               // the first in line kept
			{lk(1), lk(2), lk(3), lk(4), lk(5)}, // a stand-in for more
		} {
			ours := children[len(children)-1]
			pred := children[len(children)-2]
			w := newWaiter(ours, Predecessor, layout.MutexKinds, false, 1)
			w.line = line
			next, names := w.listed(children)
			if next != stepWatch || len(names) != 1 || names[0] != pred {
				t.Fatalf("line %v, %d places: listed = %v %v, want a watch on %s", line, len(children), next, names, pred)
			}
			w.watched(pred, nil)
			next, _ = w.deleted(pred)
			switch {
			case line && next != stepHeld:
				t.Errorf("line, %d places: the predecessor went and ours is %v, want first (no request)", len(children), next)
			case !line && next == stepHeld:
				t.Errorf("lock, %d places: held on a kept listing that still shows one ahead", len(children))
			}
			if line && (len(w.cs) != 1 || w.cs[0].Name != ours || len(w.watching) != 0) {
				t.Errorf("line, %d places: kept %v, watching %v after moving up", len(children), w.cs, w.watching)
			}
		}
	}
	// A deletion of ours (seen as an unknown name) never makes it first.
	w := newWaiter(lk(3), Predecessor, layout.MutexKinds, false, 1)
	w.line = true
	w.listed([]string{lk(2), lk(4)})
	if next, _ := w.deleted(lk(2)); next == stepHeld {
		t.Error("line: a place missing from its own listing moved up")
	}
}
