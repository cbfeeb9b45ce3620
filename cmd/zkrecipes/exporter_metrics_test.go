package main

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/internal/promtext"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// rendered is the text of a view's series at now, as a scrape writes it.
func rendered(t *testing.T, v *view, now time.Time) string {
	t.Helper()
	var samples []promtext.Sample
	for _, s := range seriesOf(v) {
		samples = append(samples, s.at(now))
	}
	var b strings.Builder
	if err := promtext.Write(&b, exporterFamilies, samples); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(b.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func fetched(node, kind, role, data string, created time.Time, token int64) participant {
	return participant{Node: node, Kind: kind, Role: role, Data: data, Created: created, Session: "0x1", Token: token, fetched: true}
}

// TestSeriesOfReadWriteLock: a read/write lock's series are by side and
// layout: readers holding together, a Curator writer and a Kazoo writer
// waiting, the oldest wait the earliest waiter's.
func TestSeriesOfReadWriteLock(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v := &view{Path: "/rw", Kind: "read-write-lock", fams: []family{famRW}}
	for _, p := range []participant{
		fetched("/rw/a__READ__0000000000", "read-lock", "holder", "r1", now.Add(-time.Minute), 10),
		fetched("/rw/b__READ__0000000001", "read-lock", "holder", "r2", now.Add(-50*time.Second), 11),
		fetched("/rw/c__WRIT__0000000002", "write-lock", "waiter", "w1", now.Add(-40*time.Second), 12),
		fetched("/rw/0123__lock__0000000003", "kazoo-lock", "waiter", "kw", now.Add(-1500*time.Millisecond), 13),
	} {
		p.fam = famRW
		v.Participants = append(v.Participants, p)
	}
	got := rendered(t, v, now)
	want := `zkrecipes_lock_holder_info{holder="r1",layout="curator",path="/rw",recipe="read-write-lock",session="0x1",side="read",token="10"} 1
zkrecipes_lock_holder_info{holder="r2",layout="curator",path="/rw",recipe="read-write-lock",session="0x1",side="read",token="11"} 1
zkrecipes_lock_holders{layout="curator",path="/rw",recipe="read-write-lock",side="read"} 2
zkrecipes_lock_holders{layout="curator",path="/rw",recipe="read-write-lock",side="write"} 0
zkrecipes_lock_holders{layout="kazoo",path="/rw",recipe="read-write-lock",side="write"} 0
zkrecipes_lock_oldest_wait_seconds{layout="curator",path="/rw",recipe="read-write-lock",side="read"} 0
zkrecipes_lock_oldest_wait_seconds{layout="curator",path="/rw",recipe="read-write-lock",side="write"} 40
zkrecipes_lock_oldest_wait_seconds{layout="kazoo",path="/rw",recipe="read-write-lock",side="write"} 1.5
zkrecipes_lock_waiters{layout="curator",path="/rw",recipe="read-write-lock",side="read"} 0
zkrecipes_lock_waiters{layout="curator",path="/rw",recipe="read-write-lock",side="write"} 1
zkrecipes_lock_waiters{layout="kazoo",path="/rw",recipe="read-write-lock",side="write"} 1
zkrecipes_recipe_warnings{path="/rw"} 0`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// A wait's age is the scrape's, not the reading's.
	if later := rendered(t, v, now.Add(10*time.Second)); !strings.Contains(later, `side="write"} 50`+"\n") {
		t.Fatalf("10s later the oldest wait did not grow by 10s:\n%s", later)
	}
}

// TestSeriesOfOtherRecipes: a semaphore with a known maximum, a naive
// lock (its waiters invisible), a partition's owners, a Curator counter
// in two encodings, a service.
func TestSeriesOfOtherRecipes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	three, n64, n32 := 3, int64(5), int64(5)
	for _, c := range []struct {
		name string
		v    *view
		want string
	}{
		{"semaphore", &view{Path: "/s", fams: []family{famSemaphore}, Semaphore: &semInfo{Max: &three, Holders: 2, Waiters: 1},
			Participants: []participant{{Role: "acquiring", Created: now.Add(-3 * time.Second), fetched: true, fam: famSemaphore}}},
			`zkrecipes_recipe_warnings{path="/s"} 0
zkrecipes_semaphore_leases{layout="curator",path="/s",recipe="semaphore"} 2
zkrecipes_semaphore_max{layout="curator",path="/s",recipe="semaphore"} 3
zkrecipes_semaphore_oldest_wait_seconds{layout="curator",path="/s",recipe="semaphore"} 3
zkrecipes_semaphore_waiters{layout="curator",path="/s",recipe="semaphore"} 1`},
		{"naive lock", &view{Path: "/n", fams: []family{famNaive}, Warnings: []string{"w"},
			Participants: []participant{{Role: "holder", Kind: "naive-lock", Data: "me\n#claim x", Session: "0x2", Token: 7, fetched: true, fam: famNaive}}},
			`zkrecipes_lock_holder_info{holder="me\n#claim x",layout="zkrecipes",path="/n",recipe="naive-lock",session="0x2",token="7"} 1
zkrecipes_lock_holders{layout="zkrecipes",path="/n",recipe="naive-lock"} 1
zkrecipes_recipe_warnings{path="/n"} 1`},
		{"partition", &view{Path: "/p", fams: []family{famPartition}, Partition: &partInfo{Members: 2, Held: 1, Items: []partRow{
			{Item: "x", Holder: "m1", Session: "0x3", Node: "/p/locks/x/_c_1-lock-0000000000", Recipe: "zkrecipes partition"}, {Item: "y"}}}},
			`zkrecipes_partition_items{layout="zkrecipes",path="/p",recipe="partition"} 2
zkrecipes_partition_items_held{layout="zkrecipes",path="/p",recipe="partition"} 1
zkrecipes_partition_members{layout="zkrecipes",path="/p",recipe="partition"} 2
zkrecipes_partition_owner_info{item="x",layout="zkrecipes",owner="m1",path="/p",recipe="partition",session="0x3"} 1
zkrecipes_recipe_warnings{path="/p"} 0`},
		{"counter", &view{Path: "/c", fams: []family{famCounter}, Counter: &counterInfo{Size: 8, Int64: &n64, Int32: &n32}},
			`zkrecipes_counter_value{encoding="int32",layout="curator",path="/c",recipe="counter"} 5
zkrecipes_counter_value{encoding="int64",layout="curator",path="/c",recipe="counter"} 5
zkrecipes_recipe_warnings{path="/c"} 0`},
		{"service", &view{Path: "/services/api", fams: []family{famService}, Service: &serviceInfo{Name: "api", Enabled: 1, Instances: make([]discovery.Instance, 2)}},
			`zkrecipes_recipe_warnings{path="/services/api"} 0
zkrecipes_service_instances{layout="curator",path="/services/api",recipe="service",service="api"} 2
zkrecipes_service_instances_enabled{layout="curator",path="/services/api",recipe="service",service="api"} 1`},
		{"directory", &view{Path: "/d", Kind: kindDirectory}, ``},
	} {
		if got := rendered(t, c.v, now); got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// TestDataLabelBounded: a node's data as a label value is valid UTF-8 and
// at most labelLimit bytes and an ellipsis, cut between characters.
func TestDataLabelBounded(t *testing.T) {
	for _, in := range []string{"short", strings.Repeat("é", 200), strings.Repeat("a", 127) + "é", "bad\xff"} {
		got := dataLabel(in)
		if !utf8.ValidString(got) || len(strings.TrimSuffix(got, "…")) > labelLimit {
			t.Errorf("dataLabel(%q) = %q", in, got)
		}
		if len(in) <= labelLimit && utf8.ValidString(in) && got != in {
			t.Errorf("dataLabel(%q) = %q, want it unchanged", in, got)
		}
	}
}
