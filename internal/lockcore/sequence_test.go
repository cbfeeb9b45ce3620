package lockcore

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// guid makes a mutex node name with GUID g and sequence n: nodes numbered
// at the limit share n and differ only in g.
func guid(g, n int) string {
	return fmt.Sprintf("_c_%08x-0000-4000-8000-000000000000-lock-%010d", g, n)
}

func TestExhausted(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"lock-0000000000", false},
		{"lock-0000000001", false},
		{"lock-2147483646", false}, // the last number given once
		{"lock-2147483647", true},  // repeated by ZooKeeper 3.6+
		{"lock--000000001", true},  // in flight past the limit, or wrapped
		{"lock--2147483648", true},
		{"abc__lock__2147483647", true},
		{"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-lease-2147483647", true},
	} {
		ct, ok := Parse(c.name)
		if !ok {
			t.Fatalf("Parse(%q) failed", c.name)
		}
		if got := Exhausted(ct.N); got != c.want {
			t.Errorf("Exhausted(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	if !Exhausted(SeqLimit) || !Exhausted(math.MinInt32) || Exhausted(SeqLimit-1) || Exhausted(0) {
		t.Error("Exhausted at the bounds")
	}
}

// TestSortBelowTheLimitIsCreationOrder: nodes numbered below the limit
// keep their order, whatever nodes at the limit are among them: those
// numbered 2147483647 sort behind every one of them, in the order of
// their GUIDs (which says nothing of their age), negative ones ahead.
func TestSortBelowTheLimitIsCreationOrder(t *testing.T) {
	children := []string{
		guid(0xffffffff, math.MaxInt32-1),
		guid(0x00000001, math.MaxInt32),
		guid(0x80000000, math.MaxInt32-3),
		guid(0x00000002, math.MaxInt32-2),
		guid(0x7fffffff, math.MaxInt32),
		guid(0x00000000, math.MaxInt32),
		guid(0x00000003, math.MinInt32),
	}
	var got []string
	for _, c := range Sort(children, MutexKinds) {
		got = append(got, c.Name)
	}
	want := []string{
		guid(0x00000003, math.MinInt32),
		guid(0x80000000, math.MaxInt32-3),
		guid(0x00000002, math.MaxInt32-2),
		guid(0xffffffff, math.MaxInt32-1),
		guid(0x00000000, math.MaxInt32),
		guid(0x00000001, math.MaxInt32),
		guid(0x7fffffff, math.MaxInt32),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("order\n%q\nwant\n%q", got, want)
	}
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
		w := newWaiter(ours, Exclusive, MutexKinds, false, window)
		if got, names := w.listed([]string{newcomer, ours, holder}); got != stepWatch || !slices.Equal(names, []string{holder}) {
			t.Fatalf("window %d: listed: %v %v, want a watch on the holder", window, got, names)
		}
		w.watched(holder, nil)
		if got, _ := w.deleted(holder); got != stepHeld {
			t.Fatalf("window %d: the holder's release: %v, want held", window, got)
		}

		w = newWaiter(ours, Exclusive, MutexKinds, false, window)
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
	if got, _ := newWaiter(rd, Shared, RWKinds, false, 0).listed([]string{wr, rd}); got != stepHeld {
		t.Fatalf("reader below a writer at the limit: %v, want held", got)
	}
}

// TestFirstChildEverIsNotExhausted: the first child ever of a directory,
// numbered 0, still holds without listing: 0 is given once.
func TestFirstChildEverIsNotExhausted(t *testing.T) {
	ours := guid(0xffffffff, 0)
	c, _ := Parse(ours)
	if Exhausted(c.N) {
		t.Fatal("0 is exhausted")
	}
	if got := newWaiter(ours, Exclusive, MutexKinds, false, 2).created(); got != stepHeld {
		t.Fatalf("the first child ever: %v, want held", got)
	}
}
