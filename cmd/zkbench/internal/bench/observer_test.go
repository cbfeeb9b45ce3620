package bench

import (
	"strings"
	"testing"
	"time"
)

// TestObserverMarkdownShowsEachRoundAndTheMedianExtra: each round's row
// gives per cycle the time, CPU time and allocations of both variants,
// the recording one's extra in percent and its events; the last row the
// medians of the extras.
func TestObserverMarkdownShowsEachRoundAndTheMedianExtra(t *testing.T) {
	r := &ObserverResults{
		Cfg: ObserverConfig{Cycles: 100},
		None: []ObserverRound{
			{Wall: 100 * time.Millisecond, CPU: 40 * time.Millisecond, Allocs: 7500},
			{Wall: 100 * time.Millisecond, CPU: 40 * time.Millisecond, Allocs: 7600},
			{Wall: 100 * time.Millisecond, CPU: 40 * time.Millisecond, Allocs: 7500},
		},
		Recorded: []ObserverRound{
			{Wall: 102 * time.Millisecond, CPU: 41 * time.Millisecond, Allocs: 9000, Events: 800},
			{Wall: 99 * time.Millisecond, CPU: 42 * time.Millisecond, Allocs: 9100, Events: 810},
			{Wall: 110 * time.Millisecond, CPU: 40 * time.Millisecond, Allocs: 9000, Events: 800},
		},
	}
	got := r.Markdown()
	for _, want := range []string{
		"| 1 | 1ms / 1.02ms | +2.0 % | 400µs / 410µs | +2.5 % | 75.0 / 90.0 | 8.0 |",
		"| 2 | 1ms / 990µs | -1.0 % | 400µs / 420µs | +5.0 % | 76.0 / 91.0 | 8.1 |",
		"| 3 | 1ms / 1.1ms | +10.0 % | 400µs / 400µs | +0.0 % | 75.0 / 90.0 | 8.0 |",
		"| median | | +2.0 % | | +2.5 % | | |",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("no row %q in\n%s", want, got)
		}
	}
}
