package bench

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("odd: %v", got)
	}
	if got := median([]time.Duration{4, 1, 3, 2}); got != 2 {
		t.Errorf("even: %v, want 2 (integer mean of 2 and 3)", got)
	}
	if got := median([]float64(nil)); got != 0 {
		t.Errorf("empty: %v", got)
	}
}

func sample() *Results {
	return &Results{
		Rounds: 3, Impls: []string{"mutex", "zk.Lock", "raw floor"}, Parts: []int{2, 10, 100},
		Uncontended: map[string]time.Duration{"mutex": 1100 * time.Microsecond, "zk.Lock": 1200 * time.Microsecond, "raw floor": 1000 * time.Microsecond},
		Handoff:     map[string]time.Duration{"mutex": time.Millisecond, "zk.Lock": 1500 * time.Microsecond},
		Handoffs:    map[string]map[int]float64{"mutex": {2: 600, 10: 650, 100: 640}, "zk.Lock": {2: 500, 10: 520, 100: 320}},
		WakeUps:     map[string]map[int]float64{"mutex": {2: 0.2, 10: 2, 100: 2}, "zk.Lock": {2: 0.2, 10: 1, 100: 1}},
		Floor:       500 * time.Microsecond,
	}
}

func TestMarkdownRatios(t *testing.T) {
	md := sample().Markdown("mutex")
	for _, want := range []string{
		"| mutex | 1.1ms | 1.10 |", // × raw floor
		"| zk.Lock ÷ mutex |",      // handoff latency ratio column
		"| floor: a delete committed + one notification (raw clients) | 500µs | 1.00 | |",
		"| mutex | 1ms | 2.00 | 1.50 |", // × floor, then 1.5 ms ÷ 1 ms
		"| | 100 | 640 | 320 | 2.00 |",  // handoffs and mutex ÷ zk.Lock
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	svg := sample().SVG()
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	lines := 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != 4 { // two implementations in two panels
		t.Fatalf("%d lines drawn, want 4", lines)
	}
}

func TestRecipeMarkdownRatios(t *testing.T) {
	r := &RecipeResults{
		Cfg:          RecipeConfig{Rounds: 3, Readers: 50, SemClients: 10, SemLeases: 3},
		Impls:        []string{"zkrecipes", "Curator"},
		Readers:      map[string]time.Duration{"zkrecipes": 30 * time.Millisecond, "Curator": 150 * time.Millisecond},
		WriteHandoff: map[string]time.Duration{"zkrecipes": 2 * time.Millisecond, "Curator": 3 * time.Millisecond},
		Semaphore:    map[string]float64{"zkrecipes": 300, "Curator": 200},
	}
	md := r.Markdown()
	for _, want := range []string{
		"| 50 readers started together: until all hold | 30ms | 150ms | 5.00 |",
		"| write handoff p50, one waiting writer | 2ms | 3ms | 1.50 |",
		"| semaphore, 10 clients, 3 leases: leases/s | 300 | 200 | 1.50 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestScaleMarkdownRatios(t *testing.T) {
	r := &ScaleResults{
		Cfg: ScaleConfig{Impls: []string{"mutex", "zk.Lock", "Curator"}, Rounds: 3, Goroutines: 64, Keys: 10000,
			Deep: []int{10, 1000}, DeepSessions: 50},
		Deep: map[string]map[int]Contended{
			"mutex":   {10: {Handoffs: 700, Elapsed: time.Second, WakeUps: 1400}, 1000: {Handoffs: 500, Elapsed: time.Second, WakeUps: 1000}},
			"zk.Lock": {10: {Handoffs: 700, Elapsed: time.Second, WakeUps: 700}, 1000: {Handoffs: 250, Elapsed: time.Second, WakeUps: 250}},
		},
		ManyKeys: map[string]ManyKeys{
			"mutex":   {Cycles: 3000, Elapsed: time.Second, P50: 20 * time.Millisecond, P99: 40 * time.Millisecond, Packets: 12000},
			"zk.Lock": {Cycles: 2000, Elapsed: time.Second, P50: 30 * time.Millisecond, P99: 60 * time.Millisecond, Packets: 14000},
			"Curator": {Cycles: 1500, Elapsed: time.Second, P50: 40 * time.Millisecond, P99: 80 * time.Millisecond, Packets: 12000},
		},
	}
	md := r.Markdown()
	for _, want := range []string{
		"| mutex | 3000 | 20ms | 40ms | 4.00 | 1.00 |",
		"| zk.Lock | 2000 | 30ms | 60ms | 7.00 | 1.50 |",
		"| Curator | 1500 | 40ms | 80ms | 8.00 | 2.00 |",
		"| deep queue, one lock: handoffs/s | 10 waiters (10 sessions) | 1000 waiters (50 sessions) | slowdown 10 → 1000 |",
		"| mutex | 700 | 500 | 1.40× | 2.00 | 1.00 |",
		"| zk.Lock | 700 | 250 | 2.80× | 1.00 | 2.00 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestProcReadsThisProcess(t *testing.T) {
	rss, threads, err := procStatus(os.Getpid())
	if err != nil || rss <= 0 || threads < 1 {
		t.Fatalf("procStatus = %d, %d, %v", rss, threads, err)
	}
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
	}
	if after, err := procCPU(os.Getpid()); err != nil || after < before {
		t.Fatalf("procCPU = %v then %v, %v", before, after, err)
	}
}

func TestScaleSVGHasItsPanels(t *testing.T) {
	r := &ScaleResults{
		Cfg:      ScaleConfig{Impls: []string{"mutex", "Curator"}, Deep: []int{10, 1000}},
		ManyKeys: map[string]ManyKeys{"mutex": {Cycles: 3000, Elapsed: time.Second}},
		Deep:     map[string]map[int]Contended{"mutex": {10: {Handoffs: 700, Elapsed: time.Second}, 1000: {Handoffs: 500, Elapsed: time.Second}}},
		Idle:     map[string]Idle{"mutex": {Waiters: 10000, RSS: 100 << 20}, "Curator": {Waiters: 10000, RSS: 1 << 30}},
	}
	svg := string(r.ScaleSVG(sample()))
	for d := xml.NewDecoder(strings.NewReader(svg)); ; {
		if _, err := d.Token(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("not well-formed: %v", err)
			}
			break
		}
	}
	for _, want := range []string{"Many keys", "Deep queue", "Idle waiters", "its floor", ">mutex, 1000<", ">10.2 KiB<", ">2.00×<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
}

// TestFailoverStartsSpreadOverTheTick: one delay in each n-th of the
// tick, none beyond it.
func TestFailoverStartsSpreadOverTheTick(t *testing.T) {
	tick := 100 * time.Millisecond
	for _, n := range []int{0, 1, 5, 13} {
		ds := failoverStarts(n, tick)
		if len(ds) != n {
			t.Fatalf("n=%d: %d delays", n, len(ds))
		}
		seen := make([]bool, n)
		for _, d := range ds {
			k := int(d * time.Duration(n) / tick)
			if d < 0 || d >= tick || seen[k] {
				t.Fatalf("n=%d: delays %v", n, ds)
			}
			seen[k] = true
		}
	}
}
