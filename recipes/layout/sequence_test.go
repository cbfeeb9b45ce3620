package layout

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
