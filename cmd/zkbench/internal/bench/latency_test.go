package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

func TestLatencyMarkdown(t *testing.T) {
	const d = 250 * time.Microsecond
	r := &LatencyResults{
		Cfg:   LatencyConfig{Delays: []time.Duration{0, d}, Rounds: 2, LeaderServer: 2},
		Impls: []string{"mutex", "zk.Lock"},
		P50: map[string]map[string]map[time.Duration][]time.Duration{
			latUncontended: {
				"mutex":   {0: {time.Millisecond, time.Millisecond}, d: {4 * time.Millisecond, 4 * time.Millisecond}},
				"zk.Lock": {0: {time.Millisecond, time.Millisecond}, d: {4500 * time.Microsecond, 5 * time.Millisecond}},
			},
			latHandoff: {
				"floor": {0: {time.Millisecond, time.Millisecond}, d: {2500 * time.Microsecond, 2500 * time.Microsecond}},
				"mutex": {0: {time.Millisecond, time.Millisecond}, d: {2500 * time.Microsecond, 2500 * time.Microsecond}},
			},
		},
		Wire: map[string]map[string]map[time.Duration]wireOps{
			latUncontended: {"mutex": {d: {requests: 400, bursts: 200, deletes: 100}}, "zk.Lock": {d: {requests: 300, bursts: 300, deletes: 100}}},
		},
	}
	md := r.Markdown("mutex", "zk.Lock")
	for _, want := range []string{
		"Server 3 led",
		"| uncontended Lock+Unlock | p50, 0s | p50, 250µs | ÷ zk.Lock at 250µs (each round) | round trips at 250µs (Δp50 ÷ 2×delay) | requests per op | client round trips per op |",
		"| mutex | 1ms | 4ms | 0.84 (0.89, 0.80) | 6.0 | 4.00 | 2.00 |", // (4.75 ms median of zk.Lock)
		"| zk.Lock | 1ms | 4.75ms | 1.00 (1.00, 1.00) | 7.5 | 3.00 | 3.00 |",
		"| floor | 1ms | 2.5ms | | 3.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestRunLatencySmall runs the latency scenarios once, small, through a
// counting proxy on the shared ensemble (its links between servers are not
// proxied here), and checks the wire counts of the uncontended cycles: the
// mutex sends a create and, behind it, a listing, then its node's watch
// (unless the hold is over by then) and a delete — two round trips;
// zk.Lock a create, a listing and a delete, one after another.
func TestRunLatencySmall(t *testing.T) {
	skipSmokeHeavy(t)
	if testing.Short() {
		t.Skip("a bench run")
	}
	ens := shared.Ensemble(t)
	p, err := zkserver.NewCountingProxy(ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	impls, err := ByName("mutex", "zk.Lock")
	if err != nil {
		t.Fatal(err)
	}
	r, err := RunLatency(context.Background(), LatencyConfig{
		Links: func(time.Duration) error { return nil }, Proxy: p, Delays: []time.Duration{0, 500 * time.Microsecond},
		Impls: impls, Iterations: 40, Duration: 300 * time.Millisecond, Rounds: 1, LeaderServer: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Requests: the mutex's node watch is not sent when the hold is over
	// before the create's answer is handled (Unlock follows at once); a
	// session's setup is counted too. Round trips: the mutex's listing
	// shares the create's, and its node's watch overlaps the delete.
	for _, c := range []struct {
		impl                   string
		minReq, maxReq, maxRTs float64
	}{{"mutex", 3, 4.2, 2.2}, {"zk.Lock", 3, 3.2, 3.2}} {
		req, rts := r.Wire[latUncontended][c.impl][500*time.Microsecond].perOp()
		if req < c.minReq || req > c.maxReq || rts > c.maxRTs || rts < 1 {
			t.Errorf("%s: %.2f requests and %.2f client round trips per uncontended cycle, want %v to %v and at most %v",
				c.impl, req, rts, c.minReq, c.maxReq, c.maxRTs)
		}
	}
	md := r.Markdown("mutex", "zk.Lock")
	if !strings.Contains(md, "| handoff, one waiter |") || !strings.Contains(md, "| 2 participants, handoffs/s |") {
		t.Errorf("the section lacks a table:\n%s", md)
	}
	t.Logf("\n%s", md)
}
