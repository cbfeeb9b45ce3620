package layout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and what it accepts is consistent: the
// name ends with the sequence it reports, the sequence reads back as the
// number, and a non-negative number is written the way ZooKeeper writes
// it (ten digits).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-lock-0000000007",
		"0123456789abcdef0123456789abcdef__lock__0000000001",
		"0123456789abcdef0123456789abcdef__rlock__0000000002",
		"_c_x-__READ__0000000003", "_c_x-__WRIT__-000000005", "_c_x-lease-2147483647",
		"_c_x-latch--2147483648", "lock-", "lock-123", "lock-00000000x1", "__lock__lock-0000000001",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		c, ok := Parse(name)
		if rc, rok := parseBySearch(name); rc != c || rok != ok {
			t.Fatalf("Parse(%q) = %+v, %v; a search for the markers says %+v, %v", name, c, ok, rc, rok)
		}
		if !ok {
			return
		}
		if c.Name != name || !strings.HasSuffix(name, c.Seq) || c.Kind == Unknown {
			t.Fatalf("Parse(%q) = %+v", name, c)
		}
		n, ok := ParseSeq(c.Seq)
		if !ok || n != c.N {
			t.Fatalf("ParseSeq(%q) = %d, %v; Parse said %d", c.Seq, n, ok, c.N)
		}
		if c.N >= 0 && !strings.HasPrefix(c.Seq, "-") && c.Seq != fmt.Sprintf("%010d", c.N) {
			t.Fatalf("sequence %q of %d is not ZooKeeper's %%010d", c.Seq, c.N)
		}
	})
}

// parseBySearch is Parse written as a search for each marker's last
// occurrence followed by a sequence suffix: slower, and plainly right.
func parseBySearch(name string) (Contender, bool) {
	for _, m := range markers {
		i := strings.LastIndex(name, m.marker)
		if i < 0 {
			continue
		}
		seq := name[i+len(m.marker):]
		if n, ok := ParseSeq(seq); ok {
			return Contender{Name: name, Seq: seq, N: n, Kind: m.kind}, true
		}
	}
	return Contender{}, false
}

// FuzzContenderOrder: Go, Curator and Kazoo contenders made from the same
// counter sort by that counter whatever their layout, and Sort is a total
// order: the same result from any input order. For counters that have not
// wrapped (non-negative), the order is also Curator's and Kazoo's: the
// sequence suffix compared as text.
func FuzzContenderOrder(f *testing.F) {
	f.Add(int32(0), int32(1), int32(2), uint8(0))
	f.Add(int32(7), int32(7), int32(2147483647), uint8(5))
	f.Add(int32(-5), int32(3), int32(-2147483648), uint8(9))
	f.Fuzz(func(t *testing.T, a, b, c int32, layout uint8) {
		layouts := []func(i int, n int32) string{
			func(i int, n int32) string {
				return fmt.Sprintf("_c_%08d-0000-0000-0000-000000000000-lock-%010d", i, n)
			},
			func(i int, n int32) string { return fmt.Sprintf("%032d__lock__%010d", i, n) },
			func(i int, n int32) string { return fmt.Sprintf("%032d__rlock__%010d", i, n) },
		}
		var names []string
		for i, n := range []int32{a, b, c} {
			names = append(names, layouts[(int(layout)+i)%len(layouts)](i, n))
		}
		got := Sort(names, MutexKinds)
		if len(got) != 3 {
			t.Fatalf("Sort(%q) kept %d", names, len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].N > got[i].N {
				t.Fatalf("Sort(%q): %d before %d", names, got[i-1].N, got[i].N)
			}
			if got[i-1].N >= 0 && got[i].N >= 0 && got[i-1].Seq > got[i].Seq {
				t.Fatalf("Sort(%q) disagrees with the text order of %q and %q", names, got[i-1].Seq, got[i].Seq)
			}
		}
		rev := slices.Clone(names)
		slices.Reverse(rev)
		again := Sort(rev, MutexKinds)
		for i := range got {
			if got[i].Name != again[i].Name {
				t.Fatalf("Sort depends on input order: %q vs %q", got, again)
			}
		}
	})
}
