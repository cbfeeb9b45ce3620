package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// The markers of the observer's section in benchmarks.md, so that a run
// of that scenario alone (--scenarios observer --docs) replaces it in
// place.
const (
	ObserverBegin = "<!-- observer:begin -->"
	ObserverEnd   = "<!-- observer:end -->"
)

// ObserverConfig says how to measure what an observer costs a Lock+Unlock.
type ObserverConfig struct {
	Servers  []string
	Rounds   int // rounds, each with its own clients and paths
	Cycles   int // Lock+Unlock cycles of each variant per round, after a warm-up
	Block    int // cycles of one variant in a row; the variants alternate, in alternating order
	Progress io.Writer
}

// ObserverRound is one round's totals of a variant.
type ObserverRound struct {
	Wall, CPU time.Duration // the cycles' elapsed time and the process's CPU time during them
	Allocs    uint64        // heap allocations of the process during them
	Events    int64         // events the recording observer was told (0 without it)
}

// ObserverResults are, per round, the totals of the uncontended
// Lock+Unlock without an observer (None) and with one that records every
// event (Recorded).
type ObserverResults struct {
	Cfg            ObserverConfig
	None, Recorded []ObserverRound
}

// recordingObserver counts every event and sums the durations of every
// end: the least a metrics adapter does with each.
type recordingObserver struct {
	events, nanos atomic.Int64
}

func (o *recordingObserver) observer() *connection.Observer {
	return &connection.Observer{
		Request: func(context.Context, connection.Request) func(connection.RequestDone) {
			o.events.Add(1)
			return func(d connection.RequestDone) { o.events.Add(1); o.nanos.Add(int64(d.Duration)) }
		},
		Notification: func(n connection.Notification) { o.events.Add(1); o.nanos.Add(int64(n.SinceWatch)) },
		StateChange:  func(connection.StateChange) { o.events.Add(1) },
		Wait: func(ctx context.Context, _ connection.Wait) (context.Context, func(connection.WaitDone)) {
			o.events.Add(1)
			return ctx, func(d connection.WaitDone) { o.events.Add(1); o.nanos.Add(int64(d.Duration)) }
		},
		Hold: func(context.Context, connection.Hold) func(connection.HoldDone) {
			o.events.Add(1)
			return func(d connection.HoldDone) { o.events.Add(1); o.nanos.Add(int64(d.Duration)) }
		},
		View:           func(connection.ViewChange) { o.events.Add(1) },
		Closed:         func(connection.ClientClosed) { o.events.Add(1) },
		CounterOutcome: func(context.Context, connection.CounterOutcome) { o.events.Add(1) },
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RunObserverOverhead runs, in each round, the uncontended Lock+Unlock of
// two clients on the first server — one without an observer, one with a
// recording observer — interleaved in blocks of cfg.Block cycles in
// alternating order, so that the machine's load falls on both alike.
func RunObserverOverhead(ctx context.Context, cfg ObserverConfig) (*ObserverResults, error) {
	if cfg.Rounds < 1 || cfg.Cycles < 1 || cfg.Block < 1 {
		return nil, errors.New("bench: the observer scenario needs positive rounds, cycles and block")
	}
	progress := orDiscard(cfg.Progress)
	root := fmt.Sprintf("/zkrecipes-bench-observer/%d", time.Now().UnixNano())
	res := &ObserverResults{Cfg: cfg}
	for round := 1; round <= cfg.Rounds; round++ {
		none, rec, err := observerRound(ctx, cfg, fmt.Sprintf("%s/%d", root, round))
		if err != nil {
			return nil, fmt.Errorf("observer overhead: %w", err)
		}
		res.None, res.Recorded = append(res.None, none), append(res.Recorded, rec)
		fmt.Fprintf(progress, "round %d/%d  Lock+Unlock without an observer %v (CPU %v), with a recording one %v (CPU %v): %+.1f%% time, %+.1f%% CPU\n",
			round, cfg.Rounds, perCycle(none.Wall, cfg.Cycles), perCycle(none.CPU, cfg.Cycles),
			perCycle(rec.Wall, cfg.Cycles), perCycle(rec.CPU, cfg.Cycles), extra(rec.Wall, none.Wall), extra(rec.CPU, none.CPU))
	}
	return res, nil
}

func observerRound(ctx context.Context, cfg ObserverConfig, path string) (none, rec ObserverRound, err error) {
	var recorder recordingObserver
	first := cfg.Servers[:1]
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	plain, err := connection.Open(octx, first, connection.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return none, rec, err
	}
	defer plain.Close()
	observed, err := connection.Open(octx, first, connection.WithSessionTimeout(sessionTimeout), connection.WithObserver(recorder.observer()))
	if err != nil {
		return none, rec, err
	}
	defer observed.Close()
	type variant struct {
		m   *mutex.Mutex
		out *ObserverRound
	}
	var vs [2]variant
	for i, c := range []*connection.Client{plain, observed} {
		m, err := mutex.New(c, fmt.Sprintf("%s/%d", path, i))
		if err != nil {
			return none, rec, err
		}
		vs[i] = variant{m, []*ObserverRound{&none, &rec}[i]}
	}
	cycle := func(m *mutex.Mutex) error {
		if err := m.Lock(ctx); err != nil {
			return err
		}
		return m.Unlock(ctx)
	}
	for _, v := range vs {
		for range max(cfg.Cycles/10, 20) { // warm both connections and the servers' paths
			if err := cycle(v.m); err != nil {
				return none, rec, err
			}
		}
	}
	recorder.events.Store(0)
	var ms runtime.MemStats
	for done, b := 0, 0; done < cfg.Cycles; done, b = done+cfg.Block, b+1 {
		n := min(cfg.Block, cfg.Cycles-done)
		order := []variant{vs[0], vs[1]}
		if b%2 == 1 {
			order = []variant{vs[1], vs[0]} // neither always goes first
		}
		for _, v := range order {
			runtime.ReadMemStats(&ms)
			mallocs, cpu, began := ms.Mallocs, processCPU(), time.Now()
			for range n {
				if err := cycle(v.m); err != nil {
					return none, rec, err
				}
			}
			v.out.Wall += time.Since(began)
			v.out.CPU += processCPU() - cpu
			runtime.ReadMemStats(&ms)
			v.out.Allocs += ms.Mallocs - mallocs
		}
	}
	rec.Events = recorder.events.Load()
	return none, rec, nil
}

func perCycle(d time.Duration, cycles int) time.Duration {
	return (d / time.Duration(cycles)).Round(time.Microsecond / 10)
}

// extra is how much longer with than without, in percent.
func extra(with, without time.Duration) float64 {
	if without <= 0 {
		return 0
	}
	return 100 * (float64(with)/float64(without) - 1)
}

// Markdown renders the rounds as a table: per Lock+Unlock, the time and
// the process's CPU time with each variant, the recording observer's
// extra, the allocations, and the events it was told.
func (r *ObserverResults) Markdown() string {
	var b strings.Builder
	n := r.Cfg.Cycles
	b.WriteString("| round | time without / with | extra time | CPU without / with | extra CPU | allocations without / with | events told |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	var extraTimes, extraCPUs []float64
	for i := range r.None {
		none, rec := r.None[i], r.Recorded[i]
		et, ec := extra(rec.Wall, none.Wall), extra(rec.CPU, none.CPU)
		extraTimes, extraCPUs = append(extraTimes, et), append(extraCPUs, ec)
		fmt.Fprintf(&b, "| %d | %v / %v | %+.1f %% | %v / %v | %+.1f %% | %.1f / %.1f | %.1f |\n", i+1,
			perCycle(none.Wall, n), perCycle(rec.Wall, n), et,
			perCycle(none.CPU, n), perCycle(rec.CPU, n), ec,
			float64(none.Allocs)/float64(n), float64(rec.Allocs)/float64(n), float64(rec.Events)/float64(n))
	}
	fmt.Fprintf(&b, "| median | | %+.1f %% | | %+.1f %% | | |\n", median(extraTimes), median(extraCPUs))
	return b.String()
}
