package layout

import (
	"fmt"
	"slices"
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

func TestKindString(t *testing.T) {
	want := map[Kind]string{
		Unknown: "unknown", Mutex: "mutex", KazooLock: "kazoo-lock", KazooRead: "kazoo-read-lock",
		Read: "read-lock", Write: "write-lock", Lease: "semaphore-lease", Latch: "leader-latch",
		Kind(-1): "unknown", Latch + 1: "unknown",
	}
	for k, s := range want {
		if k.String() != s {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), k.String(), s)
		}
	}
}

// TestKindSets: which kinds share a mutex's line, a read/write lock's,
// and which of the latter exclude readers.
func TestKindSets(t *testing.T) {
	for _, c := range []struct {
		k                 Kind
		mutex, rw, writes bool
	}{
		{Unknown, false, false, false},
		{Mutex, true, false, false},
		{KazooLock, true, true, true},
		{KazooRead, true, true, false},
		{Read, false, true, false},
		{Write, false, true, true},
		{Lease, false, false, false},
		{Latch, false, false, false},
	} {
		if MutexKinds(c.k) != c.mutex || RWKinds(c.k) != c.rw || WriteKinds(c.k) != c.writes {
			t.Errorf("%v: MutexKinds %v RWKinds %v WriteKinds %v, want %v %v %v",
				c.k, MutexKinds(c.k), RWKinds(c.k), WriteKinds(c.k), c.mutex, c.rw, c.writes)
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
	// older) sort ahead as signed numbers.
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

// TestCompareTiesByName: one number (at the limit, every node after it
// has one) is ordered by name, and only the same node compares equal.
func TestCompareTiesByName(t *testing.T) {
	a, _ := Parse("a-lock-2147483647")
	b, _ := Parse("b-lock-2147483647")
	c, _ := Parse("c-lock-0000000001")
	if Compare(a, b) >= 0 || Compare(b, a) <= 0 || Compare(a, a) != 0 || Compare(c, a) >= 0 {
		t.Fatalf("Compare: a,b %d b,a %d a,a %d c,a %d", Compare(a, b), Compare(b, a), Compare(a, a), Compare(c, a))
	}
}

// mutexName makes a Curator-layout mutex node name with sequence n.
func mutexName(n int) string {
	return fmt.Sprintf("_c_00000000-0000-4000-8000-%012d-lock-%010d", n, n)
}

// BenchmarkSort: a listing of a line of 1,000 mutex contenders, parsed
// and ordered.
func BenchmarkSort(b *testing.B) {
	children := make([]string, 1000)
	for i := range children {
		children[(i*7919)%len(children)] = mutexName(i) // in no particular order, as the server lists
	}
	b.ReportAllocs()
	for range b.N {
		Sort(children, MutexKinds)
	}
}
