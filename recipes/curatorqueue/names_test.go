package curatorqueue_test

import (
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// TestPriorityNamesAsCuratorWritesThem: Curator's priorityToString, and
// names that sort as the priorities do.
func TestPriorityNamesAsCuratorWritesThem(t *testing.T) {
	for _, tc := range []struct {
		p    int32
		want string
	}{
		{0, "100000000"},
		{10, "10000000A"},
		{math.MaxInt32, "17FFFFFFF"},
		{-1, "0FFFFFFFF"},
		{-16, "0FFFFFFF0"},
		{math.MinInt32, "080000000"},
	} {
		if got := curatorqueue.PriorityName(tc.p); got != tc.want {
			t.Errorf("priority %d: %q, want %q", tc.p, got, tc.want)
		}
	}
	ps := []int32{5, -3, math.MaxInt32, 0, math.MinInt32, -1, 1}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = curatorqueue.PriorityName(p)
	}
	sort.Strings(names)
	slices.Sort(ps)
	for i, p := range ps {
		if names[i] != curatorqueue.PriorityName(p) {
			t.Fatalf("sorted names %v do not follow sorted priorities %v", names, ps)
		}
	}
}

// TestDelayNamesAsCuratorWritesThem: Curator's epochToString, read back as
// Curator's getEpoch reads it (0, due at once, for a name it cannot read).
func TestDelayNamesAsCuratorWritesThem(t *testing.T) {
	at := time.UnixMilli(0x18C4A3B2C1D)
	if got := curatorqueue.EpochName(at); got != "|18C4A3B2C1D|" {
		t.Fatalf("epoch name %q", got)
	}
	if got := curatorqueue.EpochName(time.UnixMilli(255)); got != "|000000FF|" {
		t.Fatalf("epoch name of 255 ms: %q, want at least 8 digits", got)
	}
	for _, tc := range []struct {
		name string
		want int64
	}{
		{"queue-|18C4A3B2C1D|0000000001", 0x18C4A3B2C1D},
		{"queue-0000000001", 0},
		{"queue-||0000000001", 0},
		{"queue-|zz|0000000001", 0},
		{"|10|", 0}, // the first separator at index 0, as Curator reads it
	} {
		if got := curatorqueue.EpochOf(tc.name); got != tc.want {
			t.Errorf("epoch of %q: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestIDNamesAsCuratorWritesThem: the id between separators, '/' and '|'
// as '_'; a name without two separators is its own id.
func TestIDNamesAsCuratorWritesThem(t *testing.T) {
	if got := curatorqueue.IDName("a/b|c"); got != "|a_b_c|" {
		t.Fatalf("id name %q", got)
	}
	for _, tc := range []struct{ name, id, rest string }{
		{"queue-|order-1|0000000004", "order-1", "queue-0000000004"},
		{"queue-0000000004", "queue-0000000004", "queue-0000000004"},
		{"queue-|x0000000004", "queue-|x0000000004", "queue-|x0000000004"},
	} {
		id, rest := curatorqueue.ParseID(tc.name)
		if id != tc.id || rest != tc.rest {
			t.Errorf("%q: id %q, rest %q; want %q, %q", tc.name, id, rest, tc.id, tc.rest)
		}
	}
}

// TestOrderOfEachVariant: the order a consumer of each variant takes
// messages in, foreign names left out.
func TestOrderOfEachVariant(t *testing.T) {
	for _, tc := range []struct {
		variant string
		names   []string
		want    []string
	}{
		{"plain", []string{"queue-0000000002", "lock-1", "queue-0000000001"}, []string{"queue-0000000001", "queue-0000000002"}},
		{"priority", []string{"queue-1000000050000000000", "queue-0FFFFFFFF0000000002", "queue-1000000000000000001"},
			[]string{"queue-0FFFFFFFF0000000002", "queue-1000000000000000001", "queue-1000000050000000000"}},
		{"id", []string{"queue-|zz|0000000002", "queue-|aa|0000000003", "queue-|mm|0000000001"},
			[]string{"queue-|mm|0000000001", "queue-|zz|0000000002", "queue-|aa|0000000003"}},
		{"delay", []string{"queue-|0000FFFF|0000000001", "queue-|000000FF|0000000003", "queue-|000000FF|0000000002", "qn-0000000001"},
			[]string{"queue-|000000FF|0000000002", "queue-|000000FF|0000000003", "queue-|0000FFFF|0000000001"}},
	} {
		if got := curatorqueue.Order(tc.variant, tc.names); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.variant, got, tc.want)
		}
	}
}
