package lockcore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// name makes a Curator-layout node name with sequence n and marker m.
func name(m string, n int) string {
	return fmt.Sprintf("_c_00000000-0000-4000-8000-%012d-%s%010d", n, m, n)
}

func lk(n int) string { return name("lock-", n) }
func rd(n int) string { return name("__READ__", n) }
func wr(n int) string { return name("__WRIT__", n) }

// event is one thing that happens to a waiter, and what it must answer.
type event struct {
	kind     string // "list", "deleted", "changed", "missing"
	children []string
	node     string
	want     step
	watch    []string // for stepWatch: the new watches asked for
}

func TestWaiterStateMachine(t *testing.T) {
	cases := []struct {
		name   string
		ours   string
		pred   Predicate
		accept func(layout.Kind) bool
		relist bool
		window int
		deep   bool // more than three places back: a window changes what it does
		events []event
	}{
		{
			name: "first in line holds at once", ours: lk(1), pred: Exclusive, accept: layout.MutexKinds,
			events: []event{{kind: "list", children: []string{lk(1), lk(2)}, want: stepHeld}},
		},
		{
			name: "0-RTT handoff: the predecessor was the holder", ours: lk(3), pred: Exclusive, accept: layout.MutexKinds,
			events: []event{
				{kind: "list", children: []string{lk(2), lk(3)}, want: stepWatch, watch: []string{lk(2)}},
				{kind: "deleted", node: lk(2), want: stepHeld},
			},
		},
		{
			name: "the predecessor's predecessor goes: wait on the predecessor, no listing", ours: lk(3), pred: Exclusive, accept: layout.MutexKinds,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2), lk(3)}, want: stepWatch, watch: []string{lk(2), lk(1)}},
				{kind: "deleted", node: lk(1), want: stepWatch, watch: nil}, // 2 is watched already
				{kind: "deleted", node: lk(2), want: stepHeld},
			},
		},
		{
			name: "nodes ahead left unseen: a watch on one finds it gone, and a listing decides", ours: lk(5), pred: Exclusive, accept: layout.MutexKinds, deep: true,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2), lk(3), lk(4), lk(5)}, want: stepWatch, watch: []string{lk(4), lk(3)}},
				// 1 and 2 left without our knowing; 4 (cancelled) goes:
				// the kept listing says watch 2, which is gone.
				{kind: "deleted", node: lk(4), want: stepWatch, watch: []string{lk(2)}},
				{kind: "missing", want: stepList},
				{kind: "list", children: []string{lk(3), lk(5)}, want: stepWatch, watch: nil},
				{kind: "deleted", node: lk(3), want: stepHeld},
			},
		},
		{
			name: "nodes ahead left unseen, with a window: the stand-in makes the deletion list", ours: lk(5), pred: Exclusive, accept: layout.MutexKinds, window: 2,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2), lk(3), lk(4), lk(5)}, want: stepWatch, watch: []string{lk(4), lk(3)}},
				{kind: "deleted", node: lk(4), want: stepList},
				{kind: "list", children: []string{lk(3), lk(5)}, want: stepWatch, watch: nil},
				{kind: "deleted", node: lk(3), want: stepHeld},
			},
		},
		{
			name: "a long queue without a window: the second in line waits on without listing", ours: lk(3), pred: Exclusive, accept: layout.MutexKinds, window: 2,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2), lk(3), lk(4), lk(5)}, want: stepWatch, watch: []string{lk(2), lk(1)}},
				{kind: "deleted", node: lk(1), want: stepWatch, watch: nil},
				{kind: "deleted", node: lk(2), want: stepHeld},
			},
		},
		{
			name: "a watch finds its node gone: list again", ours: lk(3), pred: Exclusive, accept: layout.MutexKinds,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2), lk(3)}, want: stepWatch, watch: []string{lk(2), lk(1)}},
				{kind: "missing", want: stepList},
				{kind: "list", children: []string{lk(3)}, want: stepHeld},
			},
		},
		{
			name: "a changed node is watched again", ours: lk(2), pred: Exclusive, accept: layout.MutexKinds,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2)}, want: stepWatch, watch: []string{lk(1)}},
				{kind: "changed", node: lk(1), want: stepWatch, watch: []string{lk(1)}},
			},
		},
		{
			name: "our node is gone: restart", ours: lk(2), pred: Exclusive, accept: layout.MutexKinds,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2)}, want: stepWatch, watch: []string{lk(1)}},
				{kind: "list", children: []string{lk(1)}, want: stepRestart},
			},
		},
		{
			name: "a reader behind readers holds; behind a writer it watches the first writer", ours: rd(5), pred: Shared, accept: layout.RWKinds,
			events: []event{
				{kind: "list", children: []string{rd(1), wr(2), rd(3), wr(4), rd(5)}, want: stepWatch, watch: []string{wr(2)}},
				// Another writer is ahead: the kept listing says which, and
				// it is watched without a listing.
				{kind: "deleted", node: wr(2), want: stepWatch, watch: []string{wr(4)}},
			},
		},
		{
			name: "a reader's 0-RTT: the only writer ahead goes", ours: rd(3), pred: Shared, accept: layout.RWKinds,
			events: []event{
				{kind: "list", children: []string{rd(1), wr(2), rd(3)}, want: stepWatch, watch: []string{wr(2)}},
				{kind: "deleted", node: wr(2), want: stepHeld},
			},
		},
		{
			name: "relist: a writer lists again even when the kept listing says it holds (a downgrade may have inserted a reader)", ours: wr(3), pred: Exclusive, accept: layout.RWKinds, relist: true,
			events: []event{
				{kind: "list", children: []string{wr(2), wr(3)}, want: stepWatch, watch: []string{wr(2)}},
				{kind: "deleted", node: wr(2), want: stepList},
				// The downgrade's read node sits at the writer's place.
				{kind: "list", children: []string{rd(2), wr(3)}, want: stepWatch, watch: []string{rd(2)}},
				{kind: "deleted", node: rd(2), want: stepList},
				{kind: "list", children: []string{wr(3)}, want: stepHeld},
			},
		},
		{
			name: "a window keeps a waiter deep in the queue small and decides as the whole listing does", ours: lk(10), pred: Exclusive, accept: layout.MutexKinds, window: 2,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2), lk(3), lk(4), lk(5), lk(6), lk(7), lk(8), lk(9), lk(10), lk(11)}, want: stepWatch, watch: []string{lk(9), lk(8)}},
				// A waiter ahead gives up: the stand-in for 1-7 keeps ours
				// from holding, and a listing tells who is now ahead.
				{kind: "deleted", node: lk(8), want: stepList},
				{kind: "list", children: []string{lk(1), lk(2), lk(3), lk(4), lk(5), lk(6), lk(7), lk(9), lk(10)}, want: stepWatch, watch: []string{lk(7)}},
				{kind: "deleted", node: lk(9), want: stepList},
				{kind: "list", children: []string{lk(6), lk(7), lk(10)}, want: stepWatch, watch: []string{lk(6)}},
				// Three places back, nothing is left out: the kept listing
				// decides.
				{kind: "deleted", node: lk(6), want: stepWatch, watch: nil},
				{kind: "deleted", node: lk(7), want: stepHeld}, // the 0-RTT handoff, as without a window
			},
		},
		{
			name: "with a window, both watched nodes going does not make ours first: others are ahead", ours: lk(10), pred: Exclusive, accept: layout.MutexKinds, window: 2,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2), lk(3), lk(4), lk(5), lk(6), lk(7), lk(8), lk(9), lk(10)}, want: stepWatch, watch: []string{lk(9), lk(8)}},
				{kind: "deleted", node: lk(9), want: stepList},
				{kind: "deleted", node: lk(8), want: stepList},
			},
		},
		{
			name: "a window of one for the line's predicate", ours: lk(5), pred: Predecessor, accept: layout.MutexKinds, window: 1,
			events: []event{
				{kind: "list", children: []string{lk(1), lk(2), lk(3), lk(4), lk(5)}, want: stepWatch, watch: []string{lk(4)}},
				{kind: "deleted", node: lk(4), want: stepList},
				{kind: "list", children: []string{lk(3), lk(5)}, want: stepWatch, watch: []string{lk(3)}},
				{kind: "deleted", node: lk(3), want: stepHeld},
			},
		},
		{
			name: "Kazoo and Curator contenders share the mutex's queue", ours: lk(3), pred: Exclusive, accept: layout.MutexKinds,
			events: []event{
				{kind: "list", children: []string{"abc__lock__0000000002", lk(3), "readers"}, want: stepWatch, watch: []string{"abc__lock__0000000002"}},
				{kind: "deleted", node: "abc__lock__0000000002", want: stepHeld},
			},
		},
	}
	// The Exclusive cases whose waiter never sits more than three places
	// back decide the same with the mutex's window of 2.
	for _, c := range cases {
		if c.window == 0 && !c.deep && fmt.Sprint(c.pred) == fmt.Sprint(Predicate(Exclusive)) {
			c.name += ", window 2"
			c.window = 2
			cases = append(cases, c)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWaiter(c.ours, c.pred, c.accept, c.relist, c.window)
			for i, ev := range c.events {
				var got step
				var names []string
				switch ev.kind {
				case "list":
					got, names = w.listed(ev.children)
				case "deleted":
					got, names = w.deleted(ev.node)
				case "changed":
					got, names = w.changed(ev.node)
				case "missing":
					got = w.missing()
				}
				if got != ev.want || (got == stepWatch && !slices.Equal(names, ev.watch)) {
					t.Fatalf("event %d (%s %s): %v %v, want %v %v", i, ev.kind, ev.node, got, names, ev.want, ev.watch)
				}
				for _, n := range names {
					w.watched(n, nil)
				}
				if c.window > 0 && len(w.cs) > c.window+2 {
					t.Fatalf("event %d: the waiter keeps %d contenders with a window of %d", i, len(w.cs), c.window)
				}
			}
		})
	}
}

// TestFirstChildEverHoldsWithoutListing: a node with sequence 0 is the
// directory's first child ever, so nothing is ahead of it; any other
// node, or a queue where nodes may be inserted ahead, lists first.
func TestFirstChildEverHoldsWithoutListing(t *testing.T) {
	for _, c := range []struct {
		ours   string
		relist bool
		want   step
	}{
		{lk(0), false, stepHeld},
		{lk(1), false, stepList},
		{wr(0), true, stepList},
		{"not-a-contender", false, stepList},
	} {
		if got := newWaiter(c.ours, Exclusive, layout.MutexKinds, c.relist, 2).created(); got != c.want {
			t.Errorf("%s (relist %v): %v, want %v", c.ours, c.relist, got, c.want)
		}
	}
}

// TestListedKeepsNamesOfTheirOwn: whatever the listing (mixed kinds, the
// two layouts, negative and limit sequence numbers, shuffled), the
// contenders a waiter keeps after listed are those Ahead returns — same
// names, sequence suffixes, numbers and kinds, in the same order — and
// the names other than ours share no memory with the listing's strings
// (detach), so that a waiter keeps none of the listing alive.
func TestListedKeepsNamesOfTheirOwn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kazoo := func(n int) string { return "0123456789abcdef__lock__" + pad(n) }
	for round := range 300 {
		var children []string
		n := 1 + rng.IntN(30)
		for i := range n {
			switch rng.IntN(5) {
			case 0:
				children = append(children, rd(i))
			case 1:
				children = append(children, wr(i))
			case 2:
				children = append(children, kazoo(i))
			case 3:
				children = append(children, "not-a-contender")
			default:
				children = append(children, lk(i))
			}
		}
		// Names decoded one by one, as the client does: each its own string.
		for i, c := range children {
			children[i] = string([]byte(c))
		}
		rng.Shuffle(len(children), func(i, j int) { children[i], children[j] = children[j], children[i] })
		ours := ""
		for _, c := range children {
			if p, ok := layout.Parse(c); ok && layout.MutexKinds(p.Kind) && rng.IntN(2) == 0 {
				ours = c
			}
		}
		if ours == "" {
			continue
		}
		window := rng.IntN(4)
		w := newWaiter(ours, Exclusive, layout.MutexKinds, false, window)
		keep := 0
		if window > 0 {
			keep = window + 1
		}
		want, _, _ := Ahead(append([]string(nil), children...), layout.MutexKinds, ours, keep)
		w.listed(children)
		if len(w.cs) != len(want) {
			t.Fatalf("round %d: kept %d contenders, Ahead %d", round, len(w.cs), len(want))
		}
		for i, c := range w.cs {
			if c.Name != want[i].Name || c.Seq != want[i].Seq || c.N != want[i].N || c.Kind != want[i].Kind {
				t.Fatalf("round %d: kept %+v, want %+v", round, c, want[i])
			}
			if p, ok := layout.Parse(c.Name); !ok || p.Seq != c.Seq {
				t.Fatalf("round %d: kept %+v does not parse to its own Seq", round, c)
			}
			if c.Name == ours {
				continue
			}
			for _, s := range children {
				if overlaps(c.Name, s) {
					t.Fatalf("round %d: kept name %s shares memory with the listing's %s", round, c.Name, s)
				}
			}
		}
	}
}

func pad(n int) string {
	s := []byte("0000000000")
	for i := len(s) - 1; n > 0; i-- {
		s[i] = byte('0' + n%10)
		n /= 10
	}
	return string(s)
}

// overlaps reports whether a and b share bytes of memory.
func overlaps(a, b string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.StringData(a))), uintptr(unsafe.Pointer(unsafe.StringData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}
