package lockcore

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

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
			if p, ok := Parse(c); ok && MutexKinds(p.Kind) && rng.IntN(2) == 0 {
				ours = c
			}
		}
		if ours == "" {
			continue
		}
		window := rng.IntN(4)
		w := newWaiter(ours, Exclusive, MutexKinds, false, window)
		keep := 0
		if window > 0 {
			keep = window + 1
		}
		want, _, _ := Ahead(append([]string(nil), children...), MutexKinds, ours, keep)
		w.listed(children)
		if len(w.cs) != len(want) {
			t.Fatalf("round %d: kept %d contenders, Ahead %d", round, len(w.cs), len(want))
		}
		for i, c := range w.cs {
			if c.Name != want[i].Name || c.Seq != want[i].Seq || c.N != want[i].N || c.Kind != want[i].Kind {
				t.Fatalf("round %d: kept %+v, want %+v", round, c, want[i])
			}
			if p, ok := Parse(c.Name); !ok || p.Seq != c.Seq {
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
