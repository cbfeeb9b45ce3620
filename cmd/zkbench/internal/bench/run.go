package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Config says what to run.
type Config struct {
	Servers      []string
	Impls        []Impl
	Participants []int         // contended runs, e.g. 2, 10, 100
	Duration     time.Duration // each contended window
	Iterations   int           // uncontended Lock+Unlock per round
	Rounds       int           // results are medians over the rounds
	Progress     io.Writer     // a line per scenario; nil for none
}

// Results are medians over the rounds.
type Results struct {
	Rounds      int
	Uncontended map[string]time.Duration   // impl → p50
	Handoff     map[string]time.Duration   // impl → p50
	Floor       time.Duration              // p50 of a delete's commit plus one notification (RunFloor)
	Handoffs    map[string]map[int]float64 // impl → participants → handoffs/s
	WakeUps     map[string]map[int]float64 // impl → participants → wake-ups per release
	Impls       []string
	Parts       []int
}

// Run runs every scenario Rounds times, interleaving implementations so
// that a slow moment of the machine is spread over all of them.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if cfg.Rounds < 1 || cfg.Iterations < 1 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("bench: rounds, iterations and duration must be positive")
	}
	progress := orDiscard(cfg.Progress)
	un := map[string][]time.Duration{}
	hl := map[string][]time.Duration{}
	var floors []time.Duration
	ho := map[string]map[int][]float64{}
	wk := map[string]map[int][]float64{}
	root := fmt.Sprintf("/zkrecipes-bench/%d", time.Now().UnixNano())
	next := pathSeq(root)
	// Warm the servers' JVMs up: the first thousand requests of a fresh
	// server are several times slower than the rest.
	fmt.Fprintln(progress, "warming up...")
	for _, impl := range cfg.Impls {
		if _, err := RunUncontended(ctx, impl, cfg.Servers, next(), 200); err != nil {
			return nil, err
		}
	}
	for round := 1; round <= cfg.Rounds; round++ {
		for _, impl := range cfg.Impls {
			r, err := RunUncontended(ctx, impl, cfg.Servers, next(), cfg.Iterations)
			if err != nil {
				return nil, err
			}
			un[impl.Name] = append(un[impl.Name], r.P50)
			fmt.Fprintf(progress, "round %d/%d  %-10s uncontended          p50 %v  p99 %v\n", round, cfg.Rounds, impl.Name, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond))
		}
		fl, err := RunFloor(ctx, cfg.Servers, next(), max(20, cfg.Iterations/3))
		if err != nil {
			return nil, err
		}
		floors = append(floors, fl.P50)
		fmt.Fprintf(progress, "round %d/%d  %-10s delete + notification p50 %v  p99 %v\n", round, cfg.Rounds, "floor", fl.P50.Round(time.Microsecond), fl.P99.Round(time.Microsecond))
		for _, impl := range cfg.Impls {
			if !impl.Exclusive {
				continue
			}
			r, err := RunHandoff(ctx, impl, cfg.Servers, next(), max(20, cfg.Iterations/3))
			if err != nil {
				return nil, err
			}
			hl[impl.Name] = append(hl[impl.Name], r.P50)
			fmt.Fprintf(progress, "round %d/%d  %-10s handoff, one waiter   p50 %v  p99 %v\n", round, cfg.Rounds, impl.Name, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond))
		}
		for _, n := range cfg.Participants {
			for _, impl := range cfg.Impls {
				if !impl.Exclusive {
					continue
				}
				r, err := RunContended(ctx, impl, cfg.Servers, next(), n, cfg.Duration)
				if err != nil {
					return nil, err
				}
				if ho[impl.Name] == nil {
					ho[impl.Name], wk[impl.Name] = map[int][]float64{}, map[int][]float64{}
				}
				ho[impl.Name][n] = append(ho[impl.Name][n], r.PerSecond())
				wk[impl.Name][n] = append(wk[impl.Name][n], r.WakeUpsPerRelease())
				fmt.Fprintf(progress, "round %d/%d  %-10s %3d participants     %7.0f handoffs/s  %5.2f wake-ups/release\n", round, cfg.Rounds, impl.Name, n, r.PerSecond(), r.WakeUpsPerRelease())
			}
		}
	}
	res := &Results{Rounds: cfg.Rounds, Uncontended: map[string]time.Duration{}, Handoff: map[string]time.Duration{}, Handoffs: map[string]map[int]float64{}, WakeUps: map[string]map[int]float64{}, Parts: cfg.Participants, Floor: median(floors)}
	for _, impl := range cfg.Impls {
		res.Impls = append(res.Impls, impl.Name)
		res.Uncontended[impl.Name] = median(un[impl.Name])
		if len(hl[impl.Name]) > 0 {
			res.Handoff[impl.Name] = median(hl[impl.Name])
		}
		if ho[impl.Name] != nil {
			res.Handoffs[impl.Name], res.WakeUps[impl.Name] = map[int]float64{}, map[int]float64{}
			for n := range ho[impl.Name] {
				res.Handoffs[impl.Name][n] = median(ho[impl.Name][n])
				res.WakeUps[impl.Name][n] = median(wk[impl.Name][n])
			}
		}
	}
	return res, nil
}

// participantTable writes one row per participant count and one column
// per implementation with data, then, for each of ratioTo, a column of
// subject's value divided by it.
func (r *Results) participantTable(b *strings.Builder, title string, data map[string]map[int]float64, format, subject string, ratioTo []string) {
	var cols []string
	for _, name := range r.Impls {
		if data[name] != nil {
			cols = append(cols, name)
		}
	}
	fmt.Fprintf(b, "\n| %s | participants |", title)
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c)
	}
	for _, o := range ratioTo {
		fmt.Fprintf(b, " %s ÷ %s |", subject, o)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(cols)+len(ratioTo)) + "\n")
	for _, n := range r.Parts {
		fmt.Fprintf(b, "| | %d |", n)
		for _, c := range cols {
			fmt.Fprintf(b, " "+format+" |", data[c][n])
		}
		for _, o := range ratioTo {
			fmt.Fprintf(b, " %.2f |", data[subject][n]/data[o][n])
		}
		b.WriteString("\n")
	}
}

// orDiscard returns w, or io.Discard where no progress writer was given.
func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// pathSeq returns a function giving root/1, root/2, and so on: each run
// of a scenario its own path.
func pathSeq(root string) func() string {
	seq := 0
	return func() string { seq++; return fmt.Sprintf("%s/%d", root, seq) }
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Markdown renders the results as tables, with ratios against the raw
// floor (latency) and against each other lock (throughput), for the
// implementation named subject.
func (r *Results) Markdown(subject string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d rounds.\n\n", r.Rounds)
	floor := r.Uncontended["raw floor"]
	b.WriteString("| uncontended Lock+Unlock | p50 | × raw floor |\n|---|---:|---:|\n")
	for _, name := range r.Impls {
		ratio := "—"
		if floor > 0 {
			ratio = fmt.Sprintf("%.2f", float64(r.Uncontended[name])/float64(floor))
		}
		fmt.Fprintf(&b, "| %s | %v | %s |\n", name, r.Uncontended[name].Round(time.Microsecond), ratio)
	}
	b.WriteString("\n| handoff latency, one waiter (Unlock call to the waiter's Lock return) | p50 | × floor |")
	var peers []string
	for _, name := range r.Impls {
		if name != subject && r.Handoff[name] > 0 {
			peers = append(peers, name)
			fmt.Fprintf(&b, " %s ÷ %s |", name, subject)
		}
	}
	b.WriteString("\n|---|---:|---:|" + strings.Repeat("---:|", len(peers)) + "\n")
	if r.Floor > 0 {
		fmt.Fprintf(&b, "| floor: a delete committed + one notification (raw clients) | %v | 1.00 |%s\n", r.Floor.Round(time.Microsecond), strings.Repeat(" |", len(peers)))
	}
	for _, name := range r.Impls {
		if r.Handoff[name] == 0 {
			continue
		}
		ratio := "—"
		if r.Floor > 0 {
			ratio = fmt.Sprintf("%.2f", float64(r.Handoff[name])/float64(r.Floor))
		}
		fmt.Fprintf(&b, "| %s | %v | %s |", name, r.Handoff[name].Round(time.Microsecond), ratio)
		for _, p := range peers {
			if name == subject {
				fmt.Fprintf(&b, " %.2f |", float64(r.Handoff[p])/float64(r.Handoff[subject]))
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	var others []string
	for _, name := range r.Impls {
		if name != subject && r.Handoffs[name] != nil {
			others = append(others, name)
		}
	}
	r.participantTable(&b, "handoffs/s", r.Handoffs, "%.0f", subject, others)
	r.participantTable(&b, "watch wake-ups per release", r.WakeUps, "%.2f", "", nil)
	return b.String()
}
