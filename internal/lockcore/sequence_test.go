package lockcore

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// guid makes a mutex node name with GUID g and sequence n: nodes numbered
// at the limit share n and differ only in g.
func guid(g, n int) string {
	return fmt.Sprintf("_c_%08x-0000-4000-8000-000000000000-lock-%010d", g, n)
}

// TestWaiterBelowTheLimit: a waiter numbered below the limit decides as
// always. Nodes at 2147483647 made after its listing are behind it, so
// the 0-RTT handoff stands even when their GUIDs sort ahead of its own;
// a negative node it lists ahead of it is waited for, and once it has
// gone the waiter holds.
func TestWaiterBelowTheLimit(t *testing.T) {
	ours := guid(0xffffffff, math.MaxInt32-1)
	holder := guid(0x80000000, math.MaxInt32-2)
	newcomer := guid(0x00000000, math.MaxInt32)
	negative := guid(0x00000001, math.MinInt32)
	for _, window := range []int{0, 2} {
		w := newWaiter(ours, Exclusive, layout.MutexKinds, false, window)
		if got, names := w.listed([]string{newcomer, ours, holder}); got != stepWatch || !slices.Equal(names, []string{holder}) {
			t.Fatalf("window %d: listed: %v %v, want a watch on the holder", window, got, names)
		}
		w.watched(holder, nil)
		if got, _ := w.deleted(holder); got != stepHeld {
			t.Fatalf("window %d: the holder's release: %v, want held", window, got)
		}

		w = newWaiter(ours, Exclusive, layout.MutexKinds, false, window)
		got, names := w.listed([]string{negative, ours, newcomer})
		if got != stepWatch || !slices.Equal(names, []string{negative}) {
			t.Fatalf("window %d: a negative node ahead: %v %v, want a watch on it", window, got, names)
		}
		w.watched(negative, nil)
		if got, _ := w.deleted(negative); got != stepHeld {
			t.Fatalf("window %d: the negative node gone: %v, want held", window, got)
		}
	}
	// A reader below the limit is not held back by a writer at it.
	rd := fmt.Sprintf("_c_%08x-0000-4000-8000-000000000000-__READ__%010d", 1, math.MaxInt32-1)
	wr := fmt.Sprintf("_c_%08x-0000-4000-8000-000000000000-__WRIT__%010d", 0, math.MaxInt32)
	if got, _ := newWaiter(rd, Shared, layout.RWKinds, false, 0).listed([]string{wr, rd}); got != stepHeld {
		t.Fatalf("reader below a writer at the limit: %v, want held", got)
	}
}

// TestFirstChildEverIsNotExhausted: the first child ever of a directory,
// numbered 0, still holds without listing: 0 is given once.
func TestFirstChildEverIsNotExhausted(t *testing.T) {
	ours := guid(0xffffffff, 0)
	c, _ := layout.Parse(ours)
	if layout.Exhausted(c.N) {
		t.Fatal("0 is exhausted")
	}
	if got := newWaiter(ours, Exclusive, layout.MutexKinds, false, 2).created(); got != stepHeld {
		t.Fatalf("the first child ever: %v, want held", got)
	}
}
