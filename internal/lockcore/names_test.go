package lockcore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		kind Kind
		seq  string
		ok   bool
	}{
		{"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-lock-0000000003", Mutex, "0000000003", true},
		{"lock-0000000012", Mutex, "0000000012", true},
		{"1f3d2a6c5b7e4d1c9e731f3d2a6c5b7e__lock__0000000004", KazooLock, "0000000004", true},
		{"1f3d2a6c5b7e4d1c9e731f3d2a6c5b7e__rlock__0000000005", KazooRead, "0000000005", true},
		{"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-__READ__0000000001", Read, "0000000001", true},
		{"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-__WRIT__0000000002", Write, "0000000002", true},
		{"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-lease-0000000007", Lease, "0000000007", true},
		{"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-latch-0000000008", Latch, "0000000008", true},
		{"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-lock--000000005", Mutex, "-000000005", true}, // past 2^31
		{"_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-lock--2147483648", Mutex, "-2147483648", true},
		{"1f3d2a6c5b7e4d1c9e731f3d2a6c5b7e__lock__-000000042", KazooLock, "-000000042", true},
		{"lock-2147483647", Mutex, "2147483647", true},
		{"lock-2147483648", 0, "", false},  // not an int32
		{"lock--2147483649", 0, "", false}, // not an int32
		{"lock--00000005", 0, "", false},   // sign and 8 digits
		{"lock--000000000", 0, "", false},  // minus zero: not what %010d writes
		{"lock--0999999999", 0, "", false}, // eleven characters with a padding zero
		{"lock-0000000001x", 0, "", false}, // trailing text
		{"lock-000000001", 0, "", false},   // 9 digits
		{"lock-00000000x1", 0, "", false},  // not digits
		{"leases", 0, "", false},           // a plain child
		{"other-0000000001", 0, "", false}, // unknown marker
		{"", 0, "", false},
	}
	for _, c := range cases {
		got, ok := Parse(c.name)
		if ok != c.ok || got.Kind != c.kind || got.Seq != c.seq {
			t.Errorf("Parse(%q) = %+v, %v; want kind %v seq %q ok %v", c.name, got, ok, c.kind, c.seq, c.ok)
		}
	}
}

func TestSortMixesPeersBySequence(t *testing.T) {
	children := []string{
		"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000009",
		"abcdef__lock__0000000002",
		"_c_00000000-0000-4000-8000-000000000000-lock-0000000005",
		"readers",
		"abcdef__rlock__0000000003",
		"_c_11111111-0000-4000-8000-000000000000-__WRIT__0000000001",
	}
	got := Sort(children, MutexKinds)
	var names []string
	for _, c := range got {
		names = append(names, c.Seq)
	}
	if want := []string{"0000000002", "0000000003", "0000000005", "0000000009"}; !slices.Equal(names, want) {
		t.Fatalf("order %v, want %v", names, want)
	}
	if Index(got, "_c_00000000-0000-4000-8000-000000000000-lock-0000000005") != 2 || Index(got, "nope") != -1 {
		t.Fatal("Index")
	}
}

func TestSortOrdersSignedSequences(t *testing.T) {
	// Numbers at the limit: negative ones (creates in flight behind one
	// at 2^31-1 on ZooKeeper 3.6+, or a counter that wrapped on 3.5 and
	// older) sort ahead as signed numbers. No contender of ours holds with
	// one (see TestExhausted), but a waiter waits for it to go.
	children := []string{
		"a-lock-0000000007",
		"b-lock--000000001",
		"c-lock--2147483648",
		"d-lock-2147483647",
		"e-lock--000000010",
	}
	var got []int32
	for _, c := range Sort(children, MutexKinds) {
		got = append(got, c.N)
	}
	if want := []int32{-2147483648, -10, -1, 7, 2147483647}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

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
	r := func(n int32) Contender { return Contender{N: n, Kind: Read} }
	w := func(n int32) Contender { return Contender{N: n, Kind: Write} }
	kr := func(n int32) Contender { return Contender{N: n, Kind: KazooRead} }
	kw := func(n int32) Contender { return Contender{N: n, Kind: KazooLock} }
	cases := []struct {
		name  string
		cs    []Contender
		ours  int
		held  bool
		watch []int
	}{
		{"alone", []Contender{r(1)}, 0, true, nil},
		{"readers ahead", []Contender{r(1), kr(2), r(3)}, 2, true, nil},
		{"a writer ahead", []Contender{r(1), w(2), r(3)}, 2, false, []int{1}},
		{"the first writer is watched", []Contender{w(1), r(2), w(3), r(4)}, 3, false, []int{0}},
		{"a Kazoo writer ahead", []Contender{kw(1), r(2)}, 1, false, []int{0}},
		{"writers behind do not count", []Contender{r(1), w(2)}, 0, true, nil},
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
	kinds := []Kind{Read, Write, KazooRead, KazooLock}
	for name, pred := range map[string]Predicate{"Exclusive": Exclusive, "Shared": Shared} {
		// Every queue of up to 4 contenders ahead of ours, every subset.
		for n := 0; n <= 4; n++ {
			total := 1
			for range n {
				total *= len(kinds)
			}
			for code := range total {
				ahead := make([]Contender, n)
				c := code
				for i := range ahead {
					ahead[i] = Contender{N: int32(i), Kind: kinds[c%len(kinds)]}
					c /= len(kinds)
				}
				cs := append(ahead, Contender{N: int32(n), Kind: Read})
				held, _ := pred(cs, n)
				if !held {
					continue
				}
				for mask := range 1 << n {
					var sub []Contender
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
		for _, accept := range []func(Kind) bool{MutexKinds, RWKinds} {
			sorted := Sort(children, accept)
			for _, ours := range children {
				i := Index(sorted, ours)
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

// BenchmarkSort: a listing of a queue of 1,000 mutex contenders, parsed
// and ordered, as a waiter does with every listing.
func BenchmarkSort(b *testing.B) {
	children := make([]string, 1000)
	for i := range children {
		children[(i*7919)%len(children)] = lk(i) // in no particular order, as the server lists
	}
	b.ReportAllocs()
	for range b.N {
		Sort(children, MutexKinds)
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
		Ahead(children, MutexKinds, lk(999), 3)
	}
}
