package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// LatencyConfig says what to run through delayed links: every client's
// connection through Proxy, every link between servers through the
// ensemble's own proxies (DelayServerLinks), each delayed alike.
type LatencyConfig struct {
	Links        func(time.Duration) error // delays the links between servers
	Proxy        *zkserver.Proxy           // a counting proxy in front of the servers
	Delays       []time.Duration           // one way, e.g. 0 and 250 µs
	Impls        []Impl
	Iterations   int           // uncontended Lock+Unlock per round
	Duration     time.Duration // the window of the 2-participant runs
	Rounds       int
	LeaderServer int // which server leads (0-based), -1 if unknown
	Progress     io.Writer
}

// wireOps is what the proxy counted during one run: requests and bursts
// (round trips a client waited for) and the deletes, one per operation
// of every scenario (a release, a handoff, the floor's delete).
type wireOps struct {
	requests, bursts, deletes int64
}

func (w wireOps) perOp() (requests, bursts float64) {
	if w.deletes == 0 {
		return 0, 0
	}
	return float64(w.requests) / float64(w.deletes), float64(w.bursts) / float64(w.deletes)
}

// Latency scenarios.
const (
	latUncontended = "uncontended"
	latHandoff     = "handoff"
	latContended   = "2 participants"
)

// LatencyResults are medians over the rounds, per scenario, implementation
// and delay.
type LatencyResults struct {
	Cfg      LatencyConfig
	Impls    []string
	P50      map[string]map[string]map[time.Duration][]time.Duration // scenario → impl → delay → per round
	Rate     map[string]map[time.Duration][]float64                  // impl → delay → handoffs/s per round, 2 participants
	Wire     map[string]map[string]map[time.Duration]wireOps         // scenario → impl → delay → summed over rounds
	Lateness zkserver.Lateness                                       // the client proxy's, at the largest delay
}

// RunLatency runs the latency-bound scenarios at every delay, delays and
// implementations interleaved in each round.
func RunLatency(ctx context.Context, cfg LatencyConfig) (*LatencyResults, error) {
	progress := orDiscard(cfg.Progress)
	if cfg.Rounds < 1 || cfg.Iterations < 1 || len(cfg.Delays) == 0 {
		return nil, fmt.Errorf("bench: latency: rounds, iterations and delays must be given")
	}
	var deletes atomic.Int64
	const opDelete = 2
	zkserver.LogWire(cfg.Proxy, func(ev zkserver.WireEvent) {
		if ev.ToServer && ev.Op == opDelete {
			deletes.Add(1)
		}
	})
	defer zkserver.LogWire(cfg.Proxy, nil)
	defer func() { _ = cfg.Links(0); cfg.Proxy.Delay(0) }()
	r := &LatencyResults{Cfg: cfg, P50: map[string]map[string]map[time.Duration][]time.Duration{},
		Rate: map[string]map[time.Duration][]float64{}, Wire: map[string]map[string]map[time.Duration]wireOps{}}
	for _, i := range cfg.Impls {
		r.Impls = append(r.Impls, i.Name)
	}
	servers := cfg.Proxy.Servers()
	root := fmt.Sprintf("/zkrecipes-bench-latency/%d", time.Now().UnixNano())
	next := pathSeq(root)
	setDelay := func(d time.Duration) error {
		if err := cfg.Links(d); err != nil {
			return err
		}
		cfg.Proxy.Delay(d)
		return nil
	}
	// measure runs f and notes its p50 and what the wire carried.
	measure := func(scenario, impl string, d time.Duration, f func() (time.Duration, error)) (time.Duration, error) {
		w0, d0 := zkserver.ProxyWire(cfg.Proxy), deletes.Load()
		p50, err := f()
		if err != nil {
			return 0, err
		}
		w := zkserver.ProxyWire(cfg.Proxy).Sub(w0)
		if r.Wire[scenario] == nil {
			r.Wire[scenario] = map[string]map[time.Duration]wireOps{}
		}
		if r.Wire[scenario][impl] == nil {
			r.Wire[scenario][impl] = map[time.Duration]wireOps{}
		}
		o := r.Wire[scenario][impl][d]
		o.requests += w.Requests
		o.bursts += w.Bursts
		o.deletes += deletes.Load() - d0
		r.Wire[scenario][impl][d] = o
		if p50 > 0 {
			if r.P50[scenario] == nil {
				r.P50[scenario] = map[string]map[time.Duration][]time.Duration{}
			}
			if r.P50[scenario][impl] == nil {
				r.P50[scenario][impl] = map[time.Duration][]time.Duration{}
			}
			r.P50[scenario][impl][d] = append(r.P50[scenario][impl][d], p50)
		}
		return p50, nil
	}
	fmt.Fprintln(progress, "latency: warming up...")
	for _, impl := range cfg.Impls {
		if _, err := RunUncontended(ctx, impl, servers, next(), 200); err != nil {
			return nil, err
		}
	}
	largest := slices.Max(cfg.Delays)
	for round := 1; round <= cfg.Rounds; round++ {
		for _, d := range cfg.Delays {
			if err := setDelay(d); err != nil {
				return nil, err
			}
			if d == largest {
				zkserver.ProxyLateness(cfg.Proxy, true)
			}
			tag := fmt.Sprintf("round %d/%d  delay %-6v", round, cfg.Rounds, d)
			for _, impl := range cfg.Impls {
				p50, err := measure(latUncontended, impl.Name, d, func() (time.Duration, error) {
					u, err := RunUncontended(ctx, impl, servers, next(), cfg.Iterations)
					return u.P50, err
				})
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(progress, "%s %-10s uncontended p50 %v\n", tag, impl.Name, p50.Round(time.Microsecond))
			}
			p50, err := measure(latHandoff, "floor", d, func() (time.Duration, error) {
				f, err := RunFloor(ctx, servers, next(), max(20, cfg.Iterations/3))
				return f.P50, err
			})
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(progress, "%s %-10s delete + notification p50 %v\n", tag, "floor", p50.Round(time.Microsecond))
			for _, impl := range cfg.Impls {
				if !impl.Exclusive {
					continue
				}
				p50, err := measure(latHandoff, impl.Name, d, func() (time.Duration, error) {
					h, err := RunHandoff(ctx, impl, servers, next(), max(20, cfg.Iterations/3))
					return h.P50, err
				})
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(progress, "%s %-10s handoff p50 %v\n", tag, impl.Name, p50.Round(time.Microsecond))
			}
			if cfg.Duration > 0 {
				for _, impl := range cfg.Impls {
					if !impl.Exclusive {
						continue
					}
					var rate float64
					if _, err := measure(latContended, impl.Name, d, func() (time.Duration, error) {
						c, err := RunContended(ctx, impl, servers, next(), 2, cfg.Duration)
						rate = c.PerSecond()
						return 0, err
					}); err != nil {
						return nil, err
					}
					if r.Rate[impl.Name] == nil {
						r.Rate[impl.Name] = map[time.Duration][]float64{}
					}
					r.Rate[impl.Name][d] = append(r.Rate[impl.Name][d], rate)
					fmt.Fprintf(progress, "%s %-10s 2 participants %7.0f handoffs/s\n", tag, impl.Name, rate)
				}
			}
			if d == largest {
				r.Lateness = zkserver.ProxyLateness(cfg.Proxy, false)
			}
		}
	}
	return r, nil
}

// p50 is the median over the rounds.
func (r *LatencyResults) p50(scenario, impl string, d time.Duration) time.Duration {
	return median(r.P50[scenario][impl][d])
}

// roundTrips is (p50 at d − p50 at 0) ÷ 2d: the round trips of a client
// link that the delay added to the critical path, a write's quorum hops
// included (each hop between servers costs d too).
func (r *LatencyResults) roundTrips(scenario, impl string, d time.Duration) string {
	if d == 0 || len(r.P50[scenario][impl][0]) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", float64(r.p50(scenario, impl, d)-r.p50(scenario, impl, 0))/float64(2*d))
}

// Markdown renders the latency section's tables.
func (r *LatencyResults) Markdown(subject, peer string) string {
	var b strings.Builder
	cfg := r.Cfg
	delays := cfg.Delays
	var nonzero []time.Duration
	for _, d := range delays {
		if d > 0 {
			nonzero = append(nonzero, d)
		}
	}
	fmt.Fprintf(&b, "Medians of %d rounds; delays and implementations alternate within each round.", cfg.Rounds)
	if cfg.LeaderServer >= 0 {
		fmt.Fprintf(&b, " Server %d led: a write sent to server 1 (the uncontended participant's) ", cfg.LeaderServer+1)
		if cfg.LeaderServer == 0 {
			b.WriteString("is proposed at once, 2 one-way delays between servers (proposal, acknowledgement) plus the client's round trip.")
		} else {
			b.WriteString("is forwarded to the leader first: 4 one-way delays between servers (forward, proposal, acknowledgement, commit) plus the client's round trip — 3 round trips' worth of delay; a read, 1.")
		}
	}
	if r.Lateness.Chunks > 0 {
		fmt.Fprintf(&b, " The client proxy wrote its delayed chunks %v late at the median and %v at p99 (%d chunks at %v).", r.Lateness.P50, r.Lateness.P99, r.Lateness.Chunks, slices.Max(delays))
	}
	b.WriteString("\n")
	table := func(title, scenario string, rows []string) {
		fmt.Fprintf(&b, "\n| %s |", title)
		for _, d := range delays {
			fmt.Fprintf(&b, " p50, %v |", d)
		}
		for _, d := range nonzero {
			fmt.Fprintf(&b, " ÷ %s at %v (each round) |", peer, d)
		}
		for _, d := range nonzero {
			fmt.Fprintf(&b, " round trips at %v (Δp50 ÷ 2×delay) |", d)
		}
		b.WriteString(" requests per op | client round trips per op |\n|---|")
		b.WriteString(strings.Repeat("---:|", len(delays)+2*len(nonzero)+2) + "\n")
		for _, name := range rows {
			if r.P50[scenario][name] == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s |", name)
			for _, d := range delays {
				fmt.Fprintf(&b, " %v |", r.p50(scenario, name, d).Round(time.Microsecond))
			}
			for _, d := range nonzero {
				mine, theirs := r.P50[scenario][name][d], r.P50[scenario][peer][d]
				if len(theirs) == 0 || name == "floor" {
					b.WriteString(" |")
					continue
				}
				var each []string
				for i := range min(len(mine), len(theirs)) {
					each = append(each, fmt.Sprintf("%.2f", float64(mine[i])/float64(theirs[i])))
				}
				fmt.Fprintf(&b, " %.2f (%s) |", float64(r.p50(scenario, name, d))/float64(r.p50(scenario, peer, d)), strings.Join(each, ", "))
			}
			for _, d := range nonzero {
				fmt.Fprintf(&b, " %s |", r.roundTrips(scenario, name, d))
			}
			req, bursts := r.Wire[scenario][name][slices.Max(delays)].perOp()
			fmt.Fprintf(&b, " %.2f | %.2f |\n", req, bursts)
		}
	}
	table("uncontended Lock+Unlock", latUncontended, r.Impls)
	table("handoff, one waiter", latHandoff, append([]string{"floor"}, r.Impls...))
	if len(r.Rate) > 0 {
		b.WriteString("\n| 2 participants, handoffs/s |")
		for _, d := range delays {
			fmt.Fprintf(&b, " %v |", d)
		}
		b.WriteString(" requests per handoff | client round trips per handoff |\n|---|" + strings.Repeat("---:|", len(delays)+2) + "\n")
		for _, name := range r.Impls {
			if r.Rate[name] == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s |", name)
			for _, d := range delays {
				fmt.Fprintf(&b, " %.0f |", median(r.Rate[name][d]))
			}
			req, bursts := r.Wire[latContended][name][slices.Max(delays)].perOp()
			fmt.Fprintf(&b, " %.2f | %.2f |\n", req, bursts)
		}
	}
	return b.String()
}
