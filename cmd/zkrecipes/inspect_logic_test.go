package main

import (
	"strings"
	"testing"
)

// TestInspectRoles: who holds and who waits, from the names in a
// directory, for each recipe's line.
func TestInspectRoles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kids  []string
		lines map[family]string // each line's roles, in order
		kazoo bool
	}{
		{"mutex", []string{"b-lock-0000000002", "a-lock-0000000001", "c-lock-0000000003"},
			map[family]string{famMutex: "holder waiter waiter"}, false},
		{"readers share", []string{"a-__READ__0000000001", "b-__READ__0000000002", "c-__WRIT__0000000003", "d-__READ__0000000004"},
			map[family]string{famRW: "holder holder waiter waiter"}, false},
		{"writer first", []string{"a-__WRIT__0000000001", "b-__READ__0000000002"},
			map[family]string{famRW: "holder waiter"}, false},
		// A writer that took the read side: both its nodes hold, and the
		// writer behind waits, whichever of the two sorts first.
		{"downgrade", []string{"b-__WRIT__0000000001", "a-__READ__0000000001", "c-__WRIT__0000000002", "d-__READ__0000000003"},
			map[family]string{famRW: "holder holder waiter waiter"}, false},
		{"downgrade, writer gone", []string{"a-__READ__0000000001", "c-__WRIT__0000000002"},
			map[family]string{famRW: "holder waiter"}, false},
		{"Kazoo read/write", []string{"0__rlock__0000000000", "1__rlock__0000000001", "2__lock__0000000002"},
			map[family]string{famRW: "holder holder waiter"}, false},
		{"Kazoo beside Curator", []string{"0__lock__0000000000", "a-lock-0000000001"},
			map[family]string{famMutex: "holder waiter"}, true},
		{"latch", []string{"a-latch-0000000001", "b-latch-0000000000"},
			map[family]string{famLatch: "leader candidate"}, false},
		{"leases", []string{"a-lease-0000000001", "b-lease-0000000000"},
			map[family]string{famLeases: "holder holder"}, false},
		{"mixed", []string{"a-lock-0000000000", "b-__WRIT__0000000001", "c-latch-0000000002", "leases", "other"},
			map[family]string{famMutex: "holder", famRW: "holder", famLatch: "leader"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, kazoo := contenderLines(tc.kids)
			if kazoo != tc.kazoo || len(lines) != len(tc.lines) {
				t.Fatalf("lines %v, kazoo %v", lines, kazoo)
			}
			for f, want := range tc.lines {
				if got := strings.Join(roles(f, lines[f]), " "); got != want {
					t.Errorf("%s: roles %q, want %q (%v)", kindOf[f], got, want, lines[f])
				}
			}
		})
	}
}

func TestInspectWarnings(t *testing.T) {
	for _, tc := range []struct {
		fams  []family
		kazoo bool
		want  []string
	}{
		{[]family{famMutex}, false, nil},
		{[]family{famMutex, famRW}, false, []string{"a mutex and a read/write lock contend at /x without excluding each other"}},
		{[]family{famMutex, famLatch}, false, []string{"a mutex (or LeaderSelector) and a leader latch contend at /x without excluding each other"}},
		{[]family{famMutex, famSemaphore, famQueue}, false, []string{
			"a mutex and a semaphore contend at /x without excluding each other",
			"a mutex and a work queue contend at /x without excluding each other",
			"a semaphore and a work queue contend at /x without excluding each other",
		}},
		{[]family{famMutex}, true, []string{"Kazoo's nodes and nodes in Curator's layout share /x: Curator does not see Kazoo's, so a Curator and a Kazoo participant can hold at once"}},
	} {
		if got := mixWarnings("/x", tc.fams, tc.kazoo); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%v %v: %q, want %q", tc.fams, tc.kazoo, got, tc.want)
		}
	}
}

// TestInspectDiff: what --watch prints between two readings.
func TestInspectDiff(t *testing.T) {
	before := []fact{
		{key: "kind", what: "kind", detail: "mutex", attr: true},
		{key: "/x/a-lock-0000000001", what: "holder", detail: "one"},
		{key: "/x/b-lock-0000000002", what: "waiter", detail: "two"},
	}
	after := []fact{
		{key: "kind", what: "kind", detail: "mixed (mutex, leader-latch)", attr: true},
		{key: "warning: a mutex and a leader latch contend"},
		{key: "/x/b-lock-0000000002", what: "holder", detail: "two"},
		{key: "/x/c-lock-0000000003", what: "waiter", detail: "three"},
		{key: "/x/d-latch-0000000004", what: "leader", detail: "four"},
	}
	var got []string
	for _, c := range diff(before, after) {
		got = append(got, c.String())
	}
	want := []string{
		"- holder /x/a-lock-0000000001",
		"kind now mixed (mutex, leader-latch) (was mutex)",
		"+ warning: a mutex and a leader latch contend",
		"holder now /x/b-lock-0000000002 two (was waiter)",
		"+ waiter /x/c-lock-0000000003 three",
		"+ leader /x/d-latch-0000000004 four",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := diff(after, after); len(d) != 0 {
		t.Fatalf("no change, yet %v", d)
	}
	if d := diff(nil, after); len(d) != 0 {
		t.Fatalf("the first reading has changes: %v", d)
	}
	if got := (change{Op: "~", What: "holder", Key: "/x/b", Detail: "new data"}).String(); got != "~ holder /x/b new data" {
		t.Fatalf("data change: %q", got)
	}
}

func TestInspectDataText(t *testing.T) {
	for in, want := range map[string]string{
		"worker-1":               "worker-1",
		"host\n#claim 1234-5678": "host",
		"a\tb":                   `"a\tb"`,
		"\xff\x00":               `"\xff\x00"`,
		strings.Repeat("x", 70):  strings.Repeat("x", 59) + "…",
		"":                       "",
	} {
		if got := dataText(in); got != want {
			t.Errorf("dataText(%q) = %q, want %q", in, got, want)
		}
	}
}
