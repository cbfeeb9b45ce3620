package lockcore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

func TestExclusive(t *testing.T) {
	cases := []struct {
		ours  int
		held  bool
		watch []int
	}{
		{0, true, nil},
		{1, false, []int{0}},
		{2, false, []int{1, 0}},
		{7, false, []int{6, 5}},
	}
	for _, c := range cases {
		held, watch := Exclusive(nil, c.ours)
		if held != c.held || !slices.Equal(watch, c.watch) {
			t.Errorf("Exclusive(%d) = %v %v, want %v %v", c.ours, held, watch, c.held, c.watch)
		}
	}
}

func TestShared(t *testing.T) {
	r := func(n int32) layout.Contender { return layout.Contender{N: n, Kind: layout.Read} }
	w := func(n int32) layout.Contender { return layout.Contender{N: n, Kind: layout.Write} }
	kr := func(n int32) layout.Contender { return layout.Contender{N: n, Kind: layout.KazooRead} }
	kw := func(n int32) layout.Contender { return layout.Contender{N: n, Kind: layout.KazooLock} }
	cases := []struct {
		name  string
		cs    []layout.Contender
		ours  int
		held  bool
		watch []int
	}{
		{"alone", []layout.Contender{r(1)}, 0, true, nil},
		{"readers ahead", []layout.Contender{r(1), kr(2), r(3)}, 2, true, nil},
		{"a writer ahead", []layout.Contender{r(1), w(2), r(3)}, 2, false, []int{1}},
		{"the first writer is watched", []layout.Contender{w(1), r(2), w(3), r(4)}, 3, false, []int{0}},
		{"a Kazoo writer ahead", []layout.Contender{kw(1), r(2)}, 1, false, []int{0}},
		{"writers behind do not count", []layout.Contender{r(1), w(2)}, 0, true, nil},
	}
	for _, c := range cases {
		held, watch := Shared(c.cs, c.ours)
		if held != c.held || !slices.Equal(watch, c.watch) {
			t.Errorf("%s: Shared = %v %v, want %v %v", c.name, held, watch, c.held, c.watch)
		}
	}
}

// TestPredicatesAreMonotone checks the property the 0-RTT handoff relies
// on, for every predicate: if a contender holds with some contenders ahead
// of it, it holds with any subset of them.
func TestPredicatesAreMonotone(t *testing.T) {
	kinds := []layout.Kind{layout.Read, layout.Write, layout.KazooRead, layout.KazooLock}
	for name, pred := range map[string]Predicate{"Exclusive": Exclusive, "Shared": Shared} {
		// Every queue of up to 4 contenders ahead of ours, every subset.
		for n := 0; n <= 4; n++ {
			total := 1
			for range n {
				total *= len(kinds)
			}
			for code := range total {
				ahead := make([]layout.Contender, n)
				c := code
				for i := range ahead {
					ahead[i] = layout.Contender{N: int32(i), Kind: kinds[c%len(kinds)]}
					c /= len(kinds)
				}
				cs := append(ahead, layout.Contender{N: int32(n), Kind: layout.Read})
				held, _ := pred(cs, n)
				if !held {
					continue
				}
				for mask := range 1 << n {
					var sub []layout.Contender
					for i := range n {
						if mask&(1<<i) != 0 {
							sub = append(sub, ahead[i])
						}
					}
					sub = append(sub, cs[n])
					if h, _ := pred(sub, len(sub)-1); !h {
						t.Fatalf("%s holds with %v ahead but not with %v", name, ahead, sub[:len(sub)-1])
					}
				}
			}
		}
	}
}

// TestAheadIsSortUpToOurs: for random listings of mixed kinds (signed
// sequences, other recipes' nodes, names that are no contender), every
// node as ours and windows of every size, Ahead returns Sort's listing up
// to ours, or its last keep entries before ours.
func TestAheadIsSortUpToOurs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var children []string
		for i := range 1 + rng.IntN(30) {
			n := rng.IntN(60) - 10
			switch rng.IntN(6) {
			case 0:
				children = append(children, fmt.Sprintf("%032d__lock__%010d", i, n))
			case 1:
				children = append(children, rd(i)[:len(rd(i))-10]+fmt.Sprintf("%010d", n))
			case 2:
				children = append(children, "not-a-contender-"+strconv.Itoa(i))
			default:
				children = append(children, fmt.Sprintf("_c_%036d-lock-%010d", i, n))
			}
		}
		for _, accept := range []func(layout.Kind) bool{layout.MutexKinds, layout.RWKinds} {
			sorted := layout.Sort(children, accept)
			for _, ours := range children {
				i := layout.Index(sorted, ours)
				for keep := range 5 {
					cs, more, found := Ahead(children, accept, ours, keep)
					if found != (i >= 0) {
						t.Fatalf("round %d: Ahead(%s) found %v, Sort index %d", round, ours, found, i)
					}
					if i < 0 {
						continue
					}
					want, wantMore := sorted[:i+1], false
					if keep > 0 && i > keep {
						want, wantMore = sorted[i-keep:i+1], true
					}
					if !slices.Equal(cs, want) || more != wantMore {
						t.Fatalf("round %d, keep %d: Ahead(%s) = %v, %v; want %v, %v", round, keep, ours, cs, more, want, wantMore)
					}
				}
			}
		}
	}
}

// BenchmarkAhead: the same listing as a waiter at the back of the queue
// with the mutex's window reads it.
func BenchmarkAhead(b *testing.B) {
	children := make([]string, 1000)
	for i := range children {
		children[(i*7919)%len(children)] = lk(i)
	}
	b.ReportAllocs()
	for range b.N {
		Ahead(children, layout.MutexKinds, lk(999), 3)
	}
}
