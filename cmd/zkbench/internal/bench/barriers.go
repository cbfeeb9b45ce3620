package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// BarrierConfig says how to measure the double barrier against Curator's
// DistributedDoubleBarrier.
type BarrierConfig struct {
	Servers  []string
	Peers    []string // "Curator": the peer that runs beside zkrecipes (Kazoo is not measured)
	Rounds   int      // results are medians over the rounds
	Members  int      // members of the barrier, each with its own session
	Cycles   int      // barrier rounds (enter, then leave) per measurement, after a warm-up
	Progress io.Writer
}

// BarrierResults are medians over the rounds of the p50 and p99 time of
// one barrier round, by implementation.
type BarrierResults struct {
	Cfg      BarrierConfig
	Impls    []string
	P50, P99 map[string]time.Duration
}

// RunBarriers runs the double-barrier scenario, interleaving the
// implementations; round 0 warms up and is not counted.
func RunBarriers(ctx context.Context, cfg BarrierConfig) (*BarrierResults, error) {
	if cfg.Rounds < 1 || cfg.Members < 1 || cfg.Cycles < 1 {
		return nil, errors.New("bench: the barrier scenario needs positive rounds, members and cycles")
	}
	progress := orDiscard(cfg.Progress)
	impls := []string{"zkrecipes"}
	for _, p := range cfg.Peers {
		if p == "Curator" {
			impls = append(impls, p)
		}
	}
	root := fmt.Sprintf("/zkrecipes-bench-barriers/%d", time.Now().UnixNano())
	next := pathSeq(root)
	p50s, p99s := map[string][]time.Duration{}, map[string][]time.Duration{}
	for round := 0; round <= cfg.Rounds; round++ {
		for _, impl := range impls {
			var (
				p50, p99 time.Duration
				err      error
			)
			if impl == "Curator" {
				var a, b int64
				a, b, err = curatorPeer.result(ctx, cfg.Servers, next(), "doublebarrier", cfg.Members, cfg.Cycles)
				p50, p99 = time.Duration(a), time.Duration(b)
			} else {
				p50, p99, err = runDoubleRounds(ctx, cfg.Servers, next(), cfg.Members, cfg.Cycles)
			}
			if err != nil {
				return nil, fmt.Errorf("double barrier, %s: %w", impl, err)
			}
			if round == 0 {
				continue
			}
			p50s[impl] = append(p50s[impl], p50)
			p99s[impl] = append(p99s[impl], p99)
			fmt.Fprintf(progress, "round %d/%d  %-10s double barrier, %d members: round p50 %v  p99 %v\n",
				round, cfg.Rounds, impl, cfg.Members, p50.Round(time.Microsecond), p99.Round(time.Microsecond))
		}
		if round == 0 {
			fmt.Fprintln(progress, "warm-up     barriers done")
		}
	}
	res := &BarrierResults{Cfg: cfg, Impls: impls, P50: map[string]time.Duration{}, P99: map[string]time.Duration{}}
	for _, impl := range impls {
		res.P50[impl], res.P99[impl] = median(p50s[impl]), median(p99s[impl])
	}
	return res, nil
}

// runDoubleRounds has n members, each with its own session (member i on
// server i mod the servers), enter and leave one double barrier cycles
// times after a warm-up, every member out of Enter before any leaves and
// out of Leave before any enters again, as Curator's driver must do for
// its members not to stop (docs/barrier.md); it returns the p50 and p99 of
// a round as member 0 sees it, from the end of one round to the end of the
// next.
func runDoubleRounds(ctx context.Context, servers []string, path string, n, cycles int) (p50, p99 time.Duration, err error) {
	members := make([]*barrier.Double, n)
	for i := range n {
		c, err := openClient(ctx, pin(servers, i))
		if err != nil {
			return 0, 0, err
		}
		defer c.Close()
		if members[i], err = barrier.NewDouble(c, path, n); err != nil {
			return 0, 0, err
		}
	}
	warm := max(cycles/10, 20)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		rounds   = make([]time.Duration, 0, cycles)
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	between := newRendezvous(n)
	for i, d := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := time.Now()
			for r := -warm; r < cycles; r++ {
				err := d.Enter(ctx)
				if err == nil {
					err = between.wait(ctx)
				}
				if err == nil {
					err = d.Leave(ctx)
				}
				if err == nil {
					err = between.wait(ctx)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				if i == 0 {
					now := time.Now()
					if r >= 0 {
						rounds = append(rounds, now.Sub(last))
					}
					last = now
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	slices.Sort(rounds)
	return quantile(rounds, 0.5), quantile(rounds, 0.99), nil
}

// rendezvous lets n goroutines wait for each other, round after round.
type rendezvous struct {
	mu      sync.Mutex
	n, in   int
	release chan struct{}
}

func newRendezvous(n int) *rendezvous { return &rendezvous{n: n, release: make(chan struct{})} }

func (r *rendezvous) wait(ctx context.Context) error {
	r.mu.Lock()
	ch := r.release
	r.in++
	if r.in == r.n {
		r.in, r.release = 0, make(chan struct{})
		close(ch)
	}
	r.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Markdown renders the round times, with the ratio of Curator's to
// zkrecipes' (above 1: zkrecipes is faster).
func (r *BarrierResults) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d rounds; %d members, each with its own session, enter and leave a double barrier %d times in a row, all out of enter before any leaves and out of leave before any enters again (in-process waits: without them Curator's members stop); the time of one barrier round as one member sees it.\n\n",
		r.Cfg.Rounds, r.Cfg.Members, r.Cfg.Cycles)
	b.WriteString("| implementation | round p50 | round p99 |\n|---|---:|---:|\n")
	for _, i := range r.Impls {
		name := i
		if i == "Curator" {
			name = "Curator DistributedDoubleBarrier"
		}
		fmt.Fprintf(&b, "| %s | %v | %v |\n", name, r.P50[i].Round(10*time.Microsecond), r.P99[i].Round(10*time.Microsecond))
	}
	if p, ok := r.P50["Curator"]; ok && r.P50["zkrecipes"] > 0 {
		fmt.Fprintf(&b, "\nCurator's round p50 ÷ zkrecipes': %.2f.\n", float64(p)/float64(r.P50["zkrecipes"]))
	}
	return b.String()
}
