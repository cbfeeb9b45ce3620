package bench

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestSpliceSection(t *testing.T) {
	const begin, end = "<!-- b -->", "<!-- e -->"
	page := "# P\n\n## Results\n\nlocks\n\n" + begin + "\nold cache\n" + end + "\n\n## Reading the results\n\ntext\n"
	got := SpliceSection(page, begin, end, "new cache\n", "## Reading the results")
	want := "# P\n\n## Results\n\nlocks\n\n" + begin + "\nnew cache\n" + end + "\n\n## Reading the results\n\ntext\n"
	if got != want {
		t.Errorf("replacing:\n%q\nwant\n%q", got, want)
	}
	// No markers yet: before the heading, the rest kept.
	got = SpliceSection("# P\n\nlocks\n\n## Reading the results\n\ntext\n", begin, end, "cache", "## Reading the results")
	want = "# P\n\nlocks\n\n" + begin + "\ncache\n" + end + "\n\n## Reading the results\n\ntext\n"
	if got != want {
		t.Errorf("inserting:\n%q\nwant\n%q", got, want)
	}
	// No heading either, or no page: at the end.
	if got := SpliceSection("# P", begin, end, "cache", "## R"); got != "# P\n\n"+begin+"\ncache\n"+end+"\n" {
		t.Errorf("appending: %q", got)
	}
	if got := SpliceSection("", begin, end, "cache", "## R"); got != "\n"+begin+"\ncache\n"+end+"\n" {
		t.Errorf("a new page: %q", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100001: "100,001", 1234567: "1,234,567", -10001: "-10,001"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCacheTreeShape(t *testing.T) {
	for size, want := range map[int][2]int{10000: {100, 99}, 100000: {100, 999}, 1000: {31, 32}, 1: {1, 0}} {
		d, l := cacheTreeShape(size)
		if d != want[0] || l != want[1] {
			t.Errorf("cacheTreeShape(%d) = %d dirs × %d leaves, want %v", size, d, l, want)
		}
	}
}

func TestLagsOf(t *testing.T) {
	writes := map[int32]write{1: {call: 100, reply: 150}, 2: {call: 200, reply: 260}, 3: {call: 300, reply: 330}}
	// Version 3 was seen as one change with 4 (never written here); 1 and
	// 2 were seen.
	events := []stamp{{1, 170}, {2, 250}, {4, 400}}
	l := lagsOf(writes, events)
	if l.Reply.N != 2 || l.Call.N != 2 {
		t.Fatalf("matched %d, %d events, want 2", l.Reply.N, l.Call.N)
	}
	// From the reply: 20 and -10 (a notification can come before the
	// reply); from the call: 70 and 50.
	if l.Reply.P50 != 20 || l.Reply.P99 != 20 || l.Call.P50 != 70 {
		t.Fatalf("lags %+v", l)
	}
	if p := percentiles(nil); p.N != 0 || p.P50 != 0 {
		t.Fatalf("percentiles of nothing: %+v", p)
	}
}

func TestParseStamps(t *testing.T) {
	got, err := parseStamps(" 3:1700000000000000001 4:-5")
	if err != nil || len(got) != 2 || got[0] != (stamp{3, 1700000000000000001}) || got[1] != (stamp{4, -5}) {
		t.Fatalf("parseStamps = %v, %v", got, err)
	}
	if s, err := parseStamps(""); err != nil || len(s) != 0 {
		t.Fatalf("empty: %v, %v", s, err)
	}
	if _, err := parseStamps("3-17"); err == nil {
		t.Fatal("a malformed stamp parsed")
	}
}

func cacheSample() *CacheResults {
	return &CacheResults{
		Cfg:   CacheConfig{Rounds: 3, BigRounds: 1, BigSize: 100000, Changes: 10, LagSamples: 200, LagInterval: 12 * time.Millisecond, Writers: 32, WriteNodes: 1000, Duration: 3 * time.Second},
		Impls: []string{CacheZK, CacheCurator, CacheTree, CacheKazoo},
		Nodes: []int{10001, 100001},
		FirstView: map[string]map[int]time.Duration{
			CacheZK:      {10001: time.Second, 100001: 10 * time.Second},
			CacheCurator: {10001: 900 * time.Millisecond, 100001: 8 * time.Second},
			CacheTree:    {10001: 2500 * time.Millisecond, 100001: 21 * time.Second},
			CacheKazoo:   {10001: 2 * time.Second, 100001: 30 * time.Second},
		},
		RawView: map[int]time.Duration{10001: 800 * time.Millisecond},
		Seen: map[string]map[int]int{
			CacheZK: {10001: 10001, 100001: 100001}, CacheCurator: {10001: 10001, 100001: 65635},
			CacheTree: {10001: 10001, 100001: 100001}, CacheKazoo: {10001: 10001, 100001: 100001},
		},
		Heap: map[string]map[int]float64{
			CacheZK: {100001: 1400}, CacheCurator: {100001: 285}, CacheTree: {100001: 910}, CacheKazoo: {},
		},
		RSS:     map[string]map[int]float64{CacheZK: {100001: 1800}, CacheCurator: {100001: 5000}, CacheKazoo: {100001: 2500}},
		Watches: map[string]map[int]float64{CacheZK: {100001: 2}, CacheCurator: {100001: 0}, CacheTree: {100001: 2}, CacheKazoo: {100001: 2}},
		Lag: map[string]LagPass{
			CacheZK: {
				Cache:   Lag{Reply: Percentiles{P50: 400 * time.Microsecond, P99: 2 * time.Millisecond}, Call: Percentiles{P50: 1200 * time.Microsecond}},
				Raw:     Lag{Reply: Percentiles{P50: 10 * time.Microsecond}, Call: Percentiles{P50: 800 * time.Microsecond}},
				RawRead: Lag{Call: Percentiles{P50: 1100 * time.Microsecond}},
			},
			CacheCurator: {Cache: Lag{Reply: Percentiles{P50: 800 * time.Microsecond}}},
		},
		Events:     map[string]float64{CacheZK: 4000, CacheCurator: 5000},
		Writes:     map[string]float64{CacheZK: 6000, CacheCurator: 5200},
		CatchUp:    map[string]time.Duration{CacheZK: 20 * time.Millisecond},
		Consistent: map[string]bool{CacheZK: true, CacheCurator: true},
		Packets:    map[string]int64{CacheZK: 15, CacheCurator: 10010, CacheTree: 20010, CacheKazoo: 20000},
		Recovered:  map[string]bool{CacheZK: true, CacheCurator: true, CacheTree: true, CacheKazoo: false},
	}
}

func TestCacheMarkdown(t *testing.T) {
	md := cacheSample().Markdown()
	for _, want := range []string{
		"| first full view, 10,001 nodes (the same reads, nothing kept: 800ms) | 1s | 900ms | 2.5s | 2s | 0.90 | 2.50 | 2.00 |",
		"| first full view, 100,001 nodes | 10s | 8s (**65,635 nodes in it**) | 21s | 30s | 0.80 | 2.10 | 3.00 |",
		"| memory per node, 100,001 nodes: heap after GC (Kazoo: RSS) | 1,400 B | 285 B | 910 B | 2,500 B RSS | 0.20 | 0.65 | 1.79 |",
		"| server watches per node, 100,001 nodes | 2.00 | 0.00 | 2.00 | 2.00 | | | |",
		"| lag p50, a set's reply → the cache's event | 400µs | 800µs |",
		"| changed events/s, writer at full speed (its sets/s) | 4,000 (6,000) | 5,000 (5,200) |",
		"| after the writer stops | consistent after 20ms | consistent after 0s | **not consistent** after a minute |",
		"nodes: packets received | 15 | 10,010 | 20,010 | 20,000 (**changes not all seen**) | 667.33 | 1334.00 | 1333.33 |",
		"| zkrecipes | 400µs | 2ms | 1.2ms | 0s | 800µs | 1.50 | 1.1ms | 1.09 |",
		"| first view at least 2× faster than Curator's TreeCache (its time ÷ zkrecipes') | 10,001 nodes: 2.50×; 100,001 nodes: 2.10× | yes |",
		"| first view no slower than CuratorCache (its time ÷ zkrecipes') | 10,001 nodes: 0.90×; 100,001 nodes: 0.80× (not compared: its view held 65,635 nodes) | **no** |",
		"| memory per node no more than Curator's (heap, 100,001 nodes) | zkrecipes 1,400 B, CuratorCache 285 B, Curator TreeCache 910 B | **no** |",
		"| lag p50 within 1.2× of the raw watch notification | 1.50× (p50 from the set's call, same sets: 1.2ms ÷ 800µs); 1.09× the raw watch + read (1.1ms) | **no** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestRunCacheSmoke runs the cache scenarios once, small, with zkrecipes
// alone (both watch modes): every view is whole, every figure is there,
// the view is consistent after the writer, and a reconnect costs few
// packets (with the recursive watch, its reads of every node go in bulk).
func TestRunCacheSmoke(t *testing.T) {
	skipSmokeHeavy(t)
	ens := shared.Ensemble(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := RunCache(ctx, CacheConfig{
		Servers: ens.Servers(), Sizes: []int{200}, Rounds: 1, BigRounds: 1, BigSize: 100000, ServerHeap: true,
		LagSamples: 10, LagInterval: 10 * time.Millisecond, Writers: 4, WriteNodes: 20,
		Duration: 300 * time.Millisecond, Changes: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	n := r.Nodes[0]
	if d, l := cacheTreeShape(200); n != 1+d+d*l || r.Seen[CacheZK][n] != n || r.FirstView[CacheZK][n] <= 0 || r.RawView[n] <= 0 {
		t.Fatalf("first view: nodes %v, %+v", r.Nodes, r)
	}
	// The server's heap, measured where jcmd can reach the local server
	// (its value, a few kilobytes here, is within the heap's noise).
	if _, err := exec.LookPath("jcmd"); err == nil && ens.SupportsFaults() {
		if _, ok := r.ServerHeap[CacheZK][n]; !ok {
			t.Fatalf("the server's heap not measured: %v", r.ServerHeap)
		}
	}
	// One data and one child watch per node; the heap of a view.
	if w := r.Watches[CacheZK][n]; w != 2 || r.Heap[CacheZK][n] <= 0 {
		t.Fatalf("watches per node %v, heap per node %v", w, r.Heap[CacheZK][n])
	}
	if l := r.Lag[CacheZK]; l.Cache.Reply.N == 0 || l.Cache.Call.P50 <= 0 || l.Raw.Call.N == 0 || l.RawRead.Call.N == 0 {
		t.Fatalf("lag %+v", l)
	}
	if !r.Consistent[CacheZK] || r.Writes[CacheZK] <= 0 {
		t.Fatalf("full speed: %v events/s, %v sets/s, consistent %v", r.Events[CacheZK], r.Writes[CacheZK], r.Consistent[CacheZK])
	}
	// The reconnection, the watches registered again, the sync, a read
	// per change (more if a check and a fetch), and pings: nothing like a
	// read of every node.
	if p := r.Packets[CacheZK]; !r.Recovered[CacheZK] || p <= 0 || p > 60 {
		t.Fatalf("reconnect: %d packets, changes seen %v", p, r.Recovered[CacheZK])
	}
	t.Logf("reconnect: %d packets; lag %+v", r.Packets[CacheZK], r.Lag[CacheZK])
	// With the recursive watch: the whole view, one watch on the server
	// for the tree, consistent after the writer, the changes made while
	// cut off seen after a reconnect.
	rw := CacheZKRecursive
	if r.Seen[rw][n] != n || r.FirstView[rw][n] <= 0 || r.Heap[rw][n] <= 0 {
		t.Fatalf("recursive watch, first view: seen %d of %d nodes in %v", r.Seen[rw][n], n, r.FirstView[rw][n])
	}
	if w := r.Watches[rw][n]; w*float64(n) < 0.5 || w*float64(n) > 2.5 {
		t.Fatalf("recursive watch: %v watches per node, %v for the tree of %d nodes", w, w*float64(n), n)
	}
	if l := r.Lag[rw]; l.Cache.Reply.N == 0 || !r.Consistent[rw] || r.Writes[rw] <= 0 {
		t.Fatalf("recursive watch: lag %+v, consistent %v, %v sets/s", l, r.Consistent[rw], r.Writes[rw])
	}
	// The connect, the addWatch, the sync and the reads (in bulk: a few
	// requests for this tree), at least.
	if p := r.Packets[rw]; !r.Recovered[rw] || p < 4 {
		t.Fatalf("recursive watch, reconnect: %d packets (one-shot watches: %d), changes seen %v", p, r.Packets[CacheZK], r.Recovered[rw])
	}
	t.Logf("recursive watch: first view %v (one-shot %v), %.1f watches for the tree (one-shot %.1f), heap %.0f B/node (%.0f), reconnect %d packets (%d), lag p50 %v (%v)",
		r.FirstView[rw][n], r.FirstView[CacheZK][n], r.Watches[rw][n]*float64(n), r.Watches[CacheZK][n]*float64(n),
		r.Heap[rw][n], r.Heap[CacheZK][n], r.Packets[rw], r.Packets[CacheZK], r.Lag[rw].Cache.Call.P50, r.Lag[CacheZK].Cache.Call.P50)
	if md := r.Markdown(); !strings.Contains(md, "| first full view, 211 nodes") {
		t.Fatalf("markdown:\n%s", md)
	}
}
