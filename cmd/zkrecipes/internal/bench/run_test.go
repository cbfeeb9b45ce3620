package bench

import (
	"encoding/xml"
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
	}
}

func TestMarkdownRatios(t *testing.T) {
	md := sample().Markdown("mutex")
	for _, want := range []string{
		"| mutex | 1.1ms | 1.10 |",     // × raw floor
		"| zk.Lock ÷ mutex |",          // handoff latency ratio column
		"| mutex | 1ms | 1.50 |",       // 1.5 ms ÷ 1 ms
		"| | 100 | 640 | 320 | 2.00 |", // handoffs and mutex ÷ zk.Lock
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
