package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// RunFloor measures the physical floor of a handoff: one raw client
// deletes a node that another raw client, on the other server a handoff's
// waiter uses, watches; the time from the delete call to the notification
// is the delete's commit plus one notification — what any handoff waits
// for, with no lock logic and no request after the notification.
func RunFloor(ctx context.Context, servers []string, dir string, iterations int) (Handoff, error) {
	a, err := openPlain(pin(servers, 0))
	if err != nil {
		return Handoff{}, err
	}
	defer a.Close()
	b, err := openPlain(pin(servers, 1))
	if err != nil {
		return Handoff{}, err
	}
	defer b.Close()
	if _, err := a.conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return Handoff{}, err
	}
	node := dir + "/held"
	lat := make([]time.Duration, 0, iterations)
	for i := -iterations / 10; i < iterations; i++ {
		if _, err := a.conn.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			return Handoff{}, err
		}
		ok, _, ch, err := b.conn.ExistsW(node)
		if err != nil {
			return Handoff{}, err
		}
		if !ok { // b's server has not seen the create yet: it watches for it
			select {
			case <-ch:
			case <-ctx.Done():
				return Handoff{}, ctx.Err()
			}
			if _, _, ch, err = b.conn.ExistsW(node); err != nil {
				return Handoff{}, err
			}
		}
		time.Sleep(5 * time.Millisecond) // as a waiter would be: idle, watching
		start := time.Now()
		if err := a.conn.Delete(node, -1); err != nil {
			return Handoff{}, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Handoff{}, ctx.Err()
		case <-time.After(10 * time.Second):
			return Handoff{}, errors.New("floor: no notification of the delete in 10 s")
		}
		if i >= 0 {
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	return Handoff{Impl: "floor", Iterations: iterations, P50: quantile(lat, 0.5), P99: quantile(lat, 0.99)}, nil
}

// ScaleConfig says how to measure many keys on one client.
type ScaleConfig struct {
	Servers    []string
	Impls      []string // of "mutex", "zk.Lock", "Curator", "Kazoo"
	Rounds     int
	Goroutines int
	Keys       int
	Duration   time.Duration
	// Deep is the waiters of the deep-queue runs (e.g. 10 and 1000), each
	// spread over min(waiters, DeepSessions) sessions.
	Deep         []int
	DeepSessions int
	// IdleLocks × IdlePerLock waiters on one client for the idle cost;
	// none when either is 0.
	IdleLocks, IdlePerLock int
	IdleWindow             time.Duration // 0: DefaultIdleWindow
	Progress               io.Writer
}

// ScaleResults are medians over the rounds.
type ScaleResults struct {
	Cfg      ScaleConfig
	ManyKeys map[string]ManyKeys          // impl → the round with the median rate
	Deep     map[string]map[int]Contended // impl → waiters → the round with the median rate
	Idle     map[string]Idle              // impl → the round with the median memory
}

// deepImpls are the implementations of the deep queue: Impls, and the
// mutex with one watch beside the mutex.
func (c ScaleConfig) deepImpls() []string {
	var out []string
	for _, impl := range c.Impls {
		out = append(out, impl)
		if impl == "mutex" {
			out = append(out, mutexOneWatch)
		}
	}
	return out
}

// deepSessions is how many sessions n waiters share.
func (c ScaleConfig) deepSessions(n int) int { return max(1, min(n, c.DeepSessions)) }

// RunScale runs the many-keys scenario Rounds times, interleaving the
// implementations; a round 0 warms up and is not counted.
func RunScale(ctx context.Context, cfg ScaleConfig) (*ScaleResults, error) {
	if cfg.Rounds < 1 || cfg.Goroutines < 1 || cfg.Keys < 1 || cfg.Duration <= 0 {
		return nil, errors.New("bench: the many-keys scenario needs positive rounds, goroutines, keys and duration")
	}
	progress := orDiscard(cfg.Progress)
	root := fmt.Sprintf("/zkrecipes-bench-scale/%d", time.Now().UnixNano())
	runs := map[string][]ManyKeys{}
	deep := map[string]map[int][]Contended{}
	idle := map[string][]Idle{}
	for round := 0; round <= cfg.Rounds; round++ {
		for _, impl := range cfg.Impls {
			// A parent of its own per implementation and round: lock
			// directories are created on first use, as a service's are.
			parent := fmt.Sprintf("%s/%d-%s", root, round, strings.ReplaceAll(impl, ".", ""))
			r, err := RunManyKeys(ctx, impl, cfg.Servers, parent, cfg.Goroutines, cfg.Keys, cfg.Duration)
			if err != nil {
				return nil, fmt.Errorf("many keys, %s: %w", impl, err)
			}
			if round == 0 {
				continue
			}
			runs[impl] = append(runs[impl], r)
			fmt.Fprintf(progress, "round %d/%d  %-10s %d keys, %d goroutines, one client  %6.0f cycles/s  p50 %v  p99 %v  %.2f packets/cycle\n",
				round, cfg.Rounds, impl, cfg.Keys, cfg.Goroutines, r.PerSecond(), r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.PacketsPerCycle())
		}
		for _, n := range cfg.Deep {
			if round == 0 {
				break // the many-keys warm-up warmed the servers up
			}
			for i, impl := range cfg.deepImpls() {
				path := fmt.Sprintf("%s/deep-%d-%d-%d", root, round, n, i)
				r, err := RunDeep(ctx, impl, cfg.Servers, path, n, cfg.deepSessions(n), cfg.Duration)
				if err != nil {
					return nil, fmt.Errorf("deep queue of %d, %s: %w", n, impl, err)
				}
				if deep[impl] == nil {
					deep[impl] = map[int][]Contended{}
				}
				deep[impl][n] = append(deep[impl][n], r)
				fmt.Fprintf(progress, "round %d/%d  %-16s %4d waiters on %d sessions  %6.0f handoffs/s  %5.2f wake-ups/release\n",
					round, cfg.Rounds, impl, n, cfg.deepSessions(n), r.PerSecond(), r.WakeUpsPerRelease())
			}
		}
		for _, impl := range cfg.Impls {
			if round == 0 || cfg.IdleLocks <= 0 || cfg.IdlePerLock <= 0 {
				break
			}
			r, err := RunIdle(ctx, impl, cfg.Servers, fmt.Sprintf("%s/idle-%d-%s", root, round, strings.ReplaceAll(impl, ".", "")), cfg.IdleLocks, cfg.IdlePerLock, cmp.Or(cfg.IdleWindow, DefaultIdleWindow))
			if err != nil {
				return nil, fmt.Errorf("idle waiters, %s: %w", impl, err)
			}
			idle[impl] = append(idle[impl], r)
			fmt.Fprintf(progress, "round %d/%d  %-10s %d idle waiters  %6.0f B RSS/waiter  %5.2f threads/waiter  %5.2f watches/waiter  CPU %v/s (%v/s before)\n",
				round, cfg.Rounds, impl, r.Waiters, r.PerWaiter(r.RSS), r.PerWaiter(int64(r.Threads)), r.PerWaiter(r.Watches), r.CPU.Round(100*time.Microsecond), r.Base.Round(100*time.Microsecond))
		}
		if round == 0 {
			fmt.Fprintln(progress, "warm-up     done")
		}
	}
	res := &ScaleResults{Cfg: cfg, ManyKeys: map[string]ManyKeys{}, Deep: map[string]map[int]Contended{}, Idle: map[string]Idle{}}
	for impl, rs := range idle {
		slices.SortFunc(rs, func(a, b Idle) int { return cmp.Compare(a.RSS, b.RSS) })
		res.Idle[impl] = rs[len(rs)/2]
	}
	for impl, rs := range runs {
		slices.SortFunc(rs, func(a, b ManyKeys) int { return cmp.Compare(a.PerSecond(), b.PerSecond()) })
		res.ManyKeys[impl] = rs[len(rs)/2]
	}
	for impl, byN := range deep {
		res.Deep[impl] = map[int]Contended{}
		for n, rs := range byN {
			slices.SortFunc(rs, func(a, b Contended) int { return cmp.Compare(a.PerSecond(), b.PerSecond()) })
			res.Deep[impl][n] = rs[len(rs)/2]
		}
	}
	return res, nil
}

// Markdown renders the results with the ratio of the mutex to each peer.
func (r *ScaleResults) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The round with the median of %d. One client on one server, %d goroutines (threads for Curator and Kazoo), each taking and releasing locks on keys drawn at random from %d paths under one parent, a lock directory per key created on first use.\n\n",
		r.Cfg.Rounds, r.Cfg.Goroutines, r.Cfg.Keys)
	b.WriteString("| many keys, one client | Lock+Unlock/s | p50 | p99 | packets per cycle | mutex ÷ this (rate) |\n|---|---:|---:|---:|---:|---:|\n")
	mutexRate := r.ManyKeys["mutex"].PerSecond()
	for _, impl := range r.Cfg.Impls {
		m, ok := r.ManyKeys[impl]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s | %.0f | %v | %v | %.2f | %.2f |\n", impl, m.PerSecond(), m.P50.Round(time.Microsecond),
			m.P99.Round(time.Microsecond), m.PacketsPerCycle(), mutexRate/m.PerSecond())
	}
	if len(r.Cfg.Deep) > 0 {
		b.WriteString("\n| deep queue, one lock: handoffs/s |")
		for _, n := range r.Cfg.Deep {
			fmt.Fprintf(&b, " %d waiters (%d sessions) |", n, r.Cfg.deepSessions(n))
		}
		first, last := r.Cfg.Deep[0], r.Cfg.Deep[len(r.Cfg.Deep)-1]
		fmt.Fprintf(&b, " slowdown %d → %d | wake-ups per release at %d | mutex ÷ this at %d |\n|---|", first, last, last, last)
		b.WriteString(strings.Repeat("---:|", len(r.Cfg.Deep)+3) + "\n")
		for _, impl := range r.Cfg.deepImpls() {
			byN, ok := r.Deep[impl]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s |", impl)
			for _, n := range r.Cfg.Deep {
				fmt.Fprintf(&b, " %.0f |", byN[n].PerSecond())
			}
			fmt.Fprintf(&b, " %.2f× | %.2f | %.2f |\n", byN[first].PerSecond()/byN[last].PerSecond(), byN[last].WakeUpsPerRelease(),
				r.Deep["mutex"][last].PerSecond()/byN[last].PerSecond())
		}
	}
	if len(r.Idle) > 0 {
		n := r.Cfg.IdleLocks * r.Cfg.IdlePerLock
		fmt.Fprintf(&b, "\n| %d idle waiters, one client (%d locks × %d) | resident memory per waiter | Go heap and stacks per waiter | goroutines or threads per waiter | server watches per waiter | CPU while idle | CPU before the waiters | this ÷ mutex (memory) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
			n, r.Cfg.IdleLocks, r.Cfg.IdlePerLock)
		mutexRSS := r.Idle["mutex"].PerWaiter(r.Idle["mutex"].RSS)
		for _, impl := range r.Cfg.Impls {
			d, ok := r.Idle[impl]
			if !ok {
				continue
			}
			heap := "—"
			if d.HeapStack != 0 {
				heap = kib(d.PerWaiter(d.HeapStack))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.2f | %v/s | %v/s | %.2f |\n", impl, kib(d.PerWaiter(d.RSS)), heap,
				d.PerWaiter(int64(d.Threads)), d.PerWaiter(d.Watches), d.CPU.Round(100*time.Microsecond), d.Base.Round(100*time.Microsecond),
				d.PerWaiter(d.RSS)/mutexRSS)
		}
	}
	return b.String()
}

// kib writes a byte count in KiB.
func kib(bytes float64) string { return fmt.Sprintf("%.1f KiB", bytes/1024) }

// lockUnlock is one lock value.
type lockUnlock interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// holderLock is a lock core's Holder as a lock value.
type holderLock struct{ h *lockcore.Holder }

func (l holderLock) Lock(ctx context.Context) error   { return l.h.Lock(ctx, true) }
func (l holderLock) Unlock(ctx context.Context) error { return l.h.Unlock(ctx) }

// RunDeep queues waiters lock values on one lock, spread over sessions
// clients (client i on server i mod 3), each taking and releasing the
// lock in a loop, and counts the handoffs and the servers' watch
// notifications in a window of length d once the queue has filled.
func RunDeep(ctx context.Context, impl string, servers []string, lockPath string, waiters, sessions int, d time.Duration) (Contended, error) {
	if p := peerNamed(impl); p != nil {
		return p.contendedWith(ctx, servers, lockPath, waiters, d, "deep", strconv.Itoa(waiters), strconv.Itoa(sessions))
	}
	open, ok := keyedImpls[impl]
	if !ok {
		return Contended{}, fmt.Errorf("bench: no deep-queue implementation %q", impl)
	}
	clients := make([]keyed, 0, sessions)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := range sessions {
		c, err := open(ctx, pin(servers, i))
		if err != nil {
			return Contended{}, err
		}
		clients = append(clients, c)
	}
	locks := make([]lockUnlock, waiters)
	for i := range locks {
		l, err := clients[i%sessions].(interface {
			locker(string) (lockUnlock, error)
		}).locker(lockPath)
		if err != nil {
			return Contended{}, err
		}
		locks[i] = l
	}
	// Let the queue fill: every waiter has made its first Lock call and
	// had time to create its node.
	return contend(ctx, impl, servers, locks, max(2*time.Second, time.Duration(waiters)*3*time.Millisecond), d)
}
