package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sharedrecipe "github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/retry"
)

// CounterConfig says how to measure the counter against Curator's
// DistributedAtomicLong and Kazoo's Counter.
type CounterConfig struct {
	Servers      []string
	Peers        []string      // "Curator", "Kazoo": which peers run beside zkrecipes
	Rounds       int           // results are medians over the rounds
	Participants []int         // contending participants of each run
	Duration     time.Duration // each run's window
	Progress     io.Writer
}

// CounterResults are medians over the rounds: increments that succeeded
// per second, by implementation and participants.
type CounterResults struct {
	Cfg   CounterConfig
	Impls []string
	Rate  map[string]map[int]float64
}

// counterPeerName names each peer's counter in the results.
var counterPeerName = map[string]string{"Curator": "Curator DistributedAtomicLong", "Kazoo": "Kazoo Counter"}

// RunCounters runs the counter scenarios, interleaving the
// implementations; round 0 warms up and is not counted.
func RunCounters(ctx context.Context, cfg CounterConfig) (*CounterResults, error) {
	if cfg.Rounds < 1 || len(cfg.Participants) == 0 || cfg.Duration <= 0 {
		return nil, errors.New("bench: counter scenarios need positive rounds, participants and duration")
	}
	progress := orDiscard(cfg.Progress)
	impls, peers, err := peersNamed(cfg.Peers)
	if err != nil {
		return nil, err
	}
	root := fmt.Sprintf("/zkrecipes-bench-counters/%d", time.Now().UnixNano())
	next := pathSeq(root)
	rates := map[string]map[int][]float64{}
	for round := 0; round <= cfg.Rounds; round++ {
		for _, n := range cfg.Participants {
			for _, impl := range impls {
				var (
					rate float64
					err  error
				)
				if p := peers[impl]; p != nil {
					var a, b int64
					if a, b, err = p.result(ctx, cfg.Servers, next(), "counter", n, int(cfg.Duration.Milliseconds())); err == nil {
						rate = float64(a) / time.Duration(b).Seconds()
					}
				} else {
					rate, err = runCounter(ctx, cfg.Servers, next(), n, cfg.Duration)
				}
				if err != nil {
					return nil, fmt.Errorf("counter, %s, %d participants: %w", impl, n, err)
				}
				if round == 0 {
					continue
				}
				if rates[impl] == nil {
					rates[impl] = map[int][]float64{}
				}
				rates[impl][n] = append(rates[impl][n], rate)
				fmt.Fprintf(progress, "round %d/%d  %-10s counter, %3d participants: %.0f increments/s\n", round, cfg.Rounds, impl, n, rate)
			}
		}
		if round == 0 {
			fmt.Fprintln(progress, "warm-up     counters done")
		}
	}
	res := &CounterResults{Cfg: cfg, Impls: impls, Rate: map[string]map[int]float64{}}
	for impl, byN := range rates {
		res.Rate[impl] = map[int]float64{}
		for n, rs := range byN {
			res.Rate[impl][n] = median(rs)
		}
	}
	return res, nil
}

// runCounter has n participants, each with its own session, increment one
// Counter as fast as they can for d after a warm-up; it returns the increments that
// succeeded per second. Each add retries after a conflict as Curator's
// BoundedExponentialBackoffRetry(5 ms, 100 ms, 29) would.
func runCounter(ctx context.Context, servers []string, path string, n int, d time.Duration) (float64, error) {
	counters := make([]*sharedrecipe.Counter, n)
	for i := range n {
		c, err := openClient(ctx, pin(servers, i))
		if err != nil {
			return 0, err
		}
		defer c.Close()
		if counters[i], err = sharedrecipe.NewCounter(c, path, sharedrecipe.WithRetryPolicy(retry.BoundedExponentialBackoff(5*time.Millisecond, retry.MaxExponentialRetries, 100*time.Millisecond))); err != nil {
			return 0, err
		}
		defer counters[i].Close(context.Background()) // bounded by the session timeout
	}
	var (
		count    atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	// A warm-up of up to a second, not counted, as the peers' drivers do.
	start := time.Now().Add(min(d, time.Second))
	deadline := start.Add(d)
	for _, cn := range counters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				res, err := cn.Increment(ctx)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				if res.Succeeded && !time.Now().Before(start) {
					count.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(count.Load()) / time.Since(start).Seconds(), nil
}

// Markdown renders increments per second by participants, with the
// ratio of each peer to zkrecipes (above 1: zkrecipes is faster).
func (r *CounterResults) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d rounds; increments that succeeded per second.\n\n| participants |", r.Cfg.Rounds)
	for _, i := range r.Impls {
		name := i
		if n, ok := counterPeerName[i]; ok {
			name = n
		}
		fmt.Fprintf(&b, " %s |", name)
	}
	for _, i := range r.Impls[1:] {
		fmt.Fprintf(&b, " zkrecipes ÷ %s |", i)
	}
	b.WriteString("\n|---:|" + strings.Repeat("---:|", 2*len(r.Impls)-1) + "\n")
	for _, n := range r.Cfg.Participants {
		fmt.Fprintf(&b, "| %d |", n)
		for _, i := range r.Impls {
			fmt.Fprintf(&b, " %.0f |", r.Rate[i][n])
		}
		for _, i := range r.Impls[1:] {
			fmt.Fprintf(&b, " %.2f |", r.Rate["zkrecipes"][n]/r.Rate[i][n])
		}
		b.WriteString("\n")
	}
	return b.String()
}
