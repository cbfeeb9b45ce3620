package queue

import (
	"fmt"
	"testing"
)

// FuzzParseEntry: parseEntry never panics; an entry it accepts is the
// name Put asks for plus ZooKeeper's sequence, and entries order by
// priority, then sequence, as Kazoo's text sort does before the counter
// wraps.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{"entry-100-0000000007", "entry-000-0000000000", "entry-999-2147483647", "entry-100--000000005", "entry-10-0000000007", "entry-abc-0000000001", "entry-+10-0000000007", ""} {
		f.Add(s, "entry-001-0000000009")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, okA := parseEntry(a)
		eb, okB := parseEntry(b)
		for _, e := range []struct {
			e  entry
			ok bool
			s  string
		}{{ea, okA, a}, {eb, okB, b}} {
			if !e.ok {
				continue
			}
			if e.e.priority < MinPriority || e.e.priority > MaxPriority || e.e.name != e.s {
				t.Fatalf("parseEntry(%q) = %+v", e.s, e.e)
			}
			if e.e.seq >= 0 && e.s[len(e.s)-10:][0] != '-' && e.s != entryName(e.e.priority)+fmt.Sprintf("%010d", e.e.seq) {
				t.Fatalf("%q is not entryName(%d) + the sequence %d", e.s, e.e.priority, e.e.seq)
			}
		}
		if !okA || !okB {
			return
		}
		sorted := sortEntries([]string{b, a})
		if len(sorted) != 2 {
			t.Fatalf("sortEntries kept %d of 2", len(sorted))
		}
		if ea.seq >= 0 && eb.seq >= 0 && a != b {
			first := a
			if b < a {
				first = b
			}
			if sorted[0].name != first {
				t.Fatalf("order %q, %q; Kazoo's text sort puts %q first", sorted[0].name, sorted[1].name, first)
			}
		}
	})
}
