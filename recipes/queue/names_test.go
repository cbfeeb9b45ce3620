package queue

import (
	"slices"
	"testing"
)

func TestParseEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		prio int
		seq  int32
	}{
		{"entry-100-0000000007", true, 100, 7},
		{"entry-000-0000000000", true, 0, 0},
		{"entry-999-2147483647", true, 999, 2147483647},
		{"entry-100--000000005", true, 100, -5},
		{"entry-100-000000007", false, 0, 0}, // nine digits
		{"entry-10-0000000007", false, 0, 0},
		{"entry-+10-0000000007", false, 0, 0},
		{"entry--10-0000000007", false, 0, 0},
		{"entry-abc-0000000007", false, 0, 0},
		{"entry-100_0000000007", false, 0, 0},
		{"entry-100-00000000x7", false, 0, 0},
		{"_c_0f0e-lock-0000000001", false, 0, 0},
		{"entry-", false, 0, 0},
		{"", false, 0, 0},
	} {
		e, ok := parseEntry(tc.name)
		if ok != tc.ok || (ok && (e.priority != tc.prio || e.seq != tc.seq)) {
			t.Errorf("parseEntry(%q) = %+v, %v; want priority %d seq %d, %v", tc.name, e, ok, tc.prio, tc.seq, tc.ok)
		}
	}
}

func TestSortEntries(t *testing.T) {
	got := sortEntries([]string{
		"entry-100-0000000003", "junk", "entry-001-0000000009", "entry-100-0000000001",
		"entry-100--000000002", "entry-999-0000000000", "entry-001-0000000004",
	})
	var names []string
	for _, e := range got {
		names = append(names, e.name)
	}
	want := []string{
		"entry-001-0000000004", "entry-001-0000000009",
		"entry-100--000000002", // a signed sequence number, as the lock core orders them
		"entry-100-0000000001", "entry-100-0000000003", "entry-999-0000000000",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("order %q, want %q", names, want)
	}
	if entryName(7) != "entry-007-" {
		t.Fatalf("entryName(7) = %q", entryName(7))
	}
}
