package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// RecipeConfig says how to measure the read/write lock and the semaphore
// side by side with Curator's and Kazoo's.
type RecipeConfig struct {
	Servers    []string
	Peers      []string      // "Curator", "Kazoo": which peers run beside zkrecipes
	Rounds     int           // results are medians over the rounds
	Readers    int           // readers started together on a free read lock
	Iterations int           // write handoffs per round
	SemClients int           // clients taking and returning leases
	SemLeases  int           // the semaphore's leases
	Duration   time.Duration // each semaphore window
	Progress   io.Writer
}

// RecipeResults are medians over the rounds, by implementation.
type RecipeResults struct {
	Cfg          RecipeConfig
	Impls        []string
	Readers      map[string]time.Duration // until every reader started together holds
	WriteHandoff map[string]time.Duration // p50, Unlock call to the waiting writer's Lock return
	Semaphore    map[string]float64       // lease acquire+release per second
}

// RunRecipes runs the recipe scenarios, interleaving the implementations.
func RunRecipes(ctx context.Context, cfg RecipeConfig) (*RecipeResults, error) {
	if cfg.Rounds < 1 || cfg.Readers < 1 || cfg.Iterations < 1 || cfg.SemClients < 1 || cfg.SemLeases < 1 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("bench: recipe scenarios need positive rounds, readers, iterations, clients, leases and duration")
	}
	progress := orDiscard(cfg.Progress)
	impls, peers, err := peersNamed(cfg.Peers)
	if err != nil {
		return nil, err
	}
	root := fmt.Sprintf("/zkrecipes-bench-recipes/%d", time.Now().UnixNano())
	next := pathSeq(root)
	rd, wh := map[string][]time.Duration{}, map[string][]time.Duration{}
	sm := map[string][]float64{}
	// Round 0 warms the servers' JVMs and the peers' paths up; it is not
	// counted.
	for round := 0; round <= cfg.Rounds; round++ {
		for _, impl := range impls {
			var (
				readers, handoff time.Duration
				rate             float64
				err              error
			)
			if p := peers[impl]; p != nil {
				var a, b int64
				if a, _, err = p.result(ctx, cfg.Servers, next(), "readers", cfg.Readers); err == nil {
					readers = time.Duration(a)
					if a, _, err = p.result(ctx, cfg.Servers, next(), "writehandoff", cfg.Iterations); err == nil {
						handoff = time.Duration(a)
						if a, b, err = p.result(ctx, cfg.Servers, next(), "semaphore", cfg.SemClients, cfg.SemLeases, int(cfg.Duration.Milliseconds())); err == nil {
							rate = float64(a) / time.Duration(b).Seconds()
						}
					}
				}
			} else {
				if readers, err = runReaders(ctx, cfg.Servers, next(), cfg.Readers); err == nil {
					var h Handoff
					if h, err = RunHandoff(ctx, Impl{Name: "rwlock write", Exclusive: true, New: newWriteSide}, cfg.Servers, next(), cfg.Iterations); err == nil {
						handoff = h.P50
						rate, err = runSemaphore(ctx, cfg.Servers, next(), cfg.SemClients, cfg.SemLeases, cfg.Duration)
					}
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", impl, err)
			}
			if round == 0 {
				fmt.Fprintf(progress, "warm-up     %-10s done\n", impl)
				continue
			}
			rd[impl] = append(rd[impl], readers)
			wh[impl] = append(wh[impl], handoff)
			sm[impl] = append(sm[impl], rate)
			fmt.Fprintf(progress, "round %d/%d  %-10s %d readers all hold in %v; write handoff p50 %v; semaphore %.0f leases/s\n",
				round, cfg.Rounds, impl, cfg.Readers, readers.Round(time.Microsecond), handoff.Round(time.Microsecond), rate)
		}
	}
	res := &RecipeResults{Cfg: cfg, Impls: impls, Readers: map[string]time.Duration{}, WriteHandoff: map[string]time.Duration{}, Semaphore: map[string]float64{}}
	for _, impl := range impls {
		res.Readers[impl], res.WriteHandoff[impl], res.Semaphore[impl] = median(rd[impl]), median(wh[impl]), median(sm[impl])
	}
	return res, nil
}

// Markdown renders the results with ratios of each peer to zkrecipes
// (above 1: zkrecipes is faster).
func (r *RecipeResults) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d rounds.\n\n| scenario |", r.Cfg.Rounds)
	for _, i := range r.Impls {
		fmt.Fprintf(&b, " %s |", i)
	}
	for _, i := range r.Impls[1:] {
		fmt.Fprintf(&b, " %s ÷ zkrecipes |", i)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", 2*len(r.Impls)-1) + "\n")
	dur := func(title string, m map[string]time.Duration) {
		fmt.Fprintf(&b, "| %s |", title)
		for _, i := range r.Impls {
			fmt.Fprintf(&b, " %v |", m[i].Round(10*time.Microsecond))
		}
		for _, i := range r.Impls[1:] {
			fmt.Fprintf(&b, " %.2f |", float64(m[i])/float64(m["zkrecipes"]))
		}
		b.WriteString("\n")
	}
	dur(fmt.Sprintf("%d readers started together: until all hold", r.Cfg.Readers), r.Readers)
	dur("write handoff p50, one waiting writer", r.WriteHandoff)
	fmt.Fprintf(&b, "| semaphore, %d clients, %d leases: leases/s |", r.Cfg.SemClients, r.Cfg.SemLeases)
	for _, i := range r.Impls {
		fmt.Fprintf(&b, " %.0f |", r.Semaphore[i])
	}
	for _, i := range r.Impls[1:] {
		fmt.Fprintf(&b, " %.2f |", r.Semaphore["zkrecipes"]/r.Semaphore[i])
	}
	b.WriteString("\n")
	return b.String()
}

// writeSide is the write side of a read/write lock as a Participant.
type writeSide struct {
	c *connection.Client
	*rwlock.Side
}

func (w *writeSide) Close() { w.c.Close() }

func newWriteSide(ctx context.Context, servers []string, lockPath string) (Participant, error) {
	c, err := openClient(ctx, servers)
	if err != nil {
		return nil, err
	}
	rw, err := rwlock.New(c, lockPath)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &writeSide{c, rw.WriteLock()}, nil
}

// runReaders starts n readers together on a free read lock, each with its
// own session (reader i on server i mod count), and returns how long it
// took until every one of them held.
func runReaders(ctx context.Context, servers []string, lockPath string, n int) (time.Duration, error) {
	clients := make([]*connection.Client, n)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	sides := make([]*rwlock.Side, n)
	for i := range n {
		c, err := openClient(ctx, pin(servers, i))
		if err != nil {
			return 0, err
		}
		clients[i] = c
		rw, err := rwlock.New(c, lockPath)
		if err != nil {
			return 0, err
		}
		sides[i] = rw.ReadLock()
	}
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- s.Lock(ctx)
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	for _, s := range sides {
		if err := s.Unlock(ctx); err != nil {
			return 0, err
		}
	}
	return elapsed, nil
}

// runSemaphore has n clients take and return one lease of a semaphore of
// leases, as fast as they can, for d; it returns leases per second.
func runSemaphore(ctx context.Context, servers []string, path string, n, leases int, d time.Duration) (float64, error) {
	sems := make([]*semaphore.Semaphore, n)
	for i := range n {
		c, err := openClient(ctx, pin(servers, i))
		if err != nil {
			return 0, err
		}
		defer c.Close()
		if sems[i], err = semaphore.New(c, path, leases); err != nil {
			return 0, err
		}
	}
	var (
		count    atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	deadline := time.Now().Add(d)
	start := time.Now()
	for _, s := range sems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				got, err := s.Acquire(ctx, 1)
				if err == nil {
					err = got[0].Release(ctx)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(count.Load()) / time.Since(start).Seconds(), nil
}

// result runs a peer scenario that prints RESULT <a> <b>.
func (p *peer) result(ctx context.Context, servers []string, path, scenario string, args ...int) (int64, int64, error) {
	strs := []string{scenario}
	for _, a := range args {
		strs = append(strs, strconv.Itoa(a))
	}
	d, err := p.start(ctx, servers, path, strs...)
	if err != nil {
		return 0, 0, err
	}
	res, err := d.next("RESULT")
	if err != nil {
		return 0, 0, err
	}
	var a, b int64
	if _, err := fmt.Sscanf(res, "%d %d", &a, &b); err != nil {
		return 0, 0, fmt.Errorf("%s driver said %q: %w", p.name, res, err)
	}
	return a, b, d.wait()
}
