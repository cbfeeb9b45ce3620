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

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peers"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// DiscoveryConfig says how to measure service discovery against Curator's
// ServiceDiscovery (curator-x-discovery).
type DiscoveryConfig struct {
	Servers        []string
	Curator        bool          // run Curator's driver beside zkrecipes
	Rounds         int           // results are medians over the rounds
	Watchers       int           // caches of the service, each with its own session
	Registrations  int           // registrations per round
	Expiries       int           // expiries per round
	SessionTimeout time.Duration // of zkrecipes' registrar in the expiry scenario
	Progress       io.Writer
}

// DiscoveryResults are medians over the rounds, by implementation.
type DiscoveryResults struct {
	Cfg                  DiscoveryConfig
	Impls                []string
	PropagateP50         map[string]time.Duration // registration call → a watcher's cache sees it
	PropagateP99         map[string]time.Duration
	Reregister, ReregMax map[string]time.Duration // new session → a watcher sees it again
}

// curatorDiscoveryPeer is Curator's ServiceDiscovery in a driver of its
// own: only it needs curator-x-discovery.
var curatorDiscoveryPeer = &peer{name: "Curator", driver: peers.CuratorDiscoveryBench}

// RunDiscovery runs the discovery scenarios, interleaving the
// implementations; round 0 warms up and is not counted.
func RunDiscovery(ctx context.Context, cfg DiscoveryConfig) (*DiscoveryResults, error) {
	if cfg.Rounds < 1 || cfg.Watchers < 1 || cfg.Registrations < 1 || cfg.Expiries < 1 || cfg.SessionTimeout <= 0 {
		return nil, errors.New("bench: discovery scenarios need positive rounds, watchers, registrations, expiries and session timeout")
	}
	progress := orDiscard(cfg.Progress)
	impls := []string{"zkrecipes"}
	if cfg.Curator {
		impls = append(impls, "Curator")
	}
	root := fmt.Sprintf("/zkrecipes-bench-discovery/%d", time.Now().UnixNano())
	next := pathSeq(root)
	p50s, p99s, rr, rm := map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}
	for round := 0; round <= cfg.Rounds; round++ {
		for _, impl := range impls {
			var (
				p50, p99, re, reMax time.Duration
				err                 error
			)
			if impl == "Curator" {
				var a, b int64
				if a, b, err = curatorDiscoveryPeer.result(ctx, cfg.Servers, next(), "propagate", cfg.Watchers, cfg.Registrations); err == nil {
					p50, p99 = time.Duration(a), time.Duration(b)
					if a, b, err = curatorDiscoveryPeer.result(ctx, cfg.Servers, next(), "reregister", cfg.Expiries); err == nil {
						re, reMax = time.Duration(a), time.Duration(b)
					}
				}
			} else if p50, p99, err = runPropagate(ctx, cfg.Servers, next(), cfg.Watchers, cfg.Registrations); err == nil {
				re, reMax, err = runReregister(ctx, cfg.Servers, next(), cfg.Expiries, cfg.SessionTimeout)
			}
			if err != nil {
				return nil, fmt.Errorf("discovery, %s: %w", impl, err)
			}
			if round == 0 {
				fmt.Fprintf(progress, "warm-up     %-10s done\n", impl)
				continue
			}
			p50s[impl], p99s[impl] = append(p50s[impl], p50), append(p99s[impl], p99)
			rr[impl], rm[impl] = append(rr[impl], re), append(rm[impl], reMax)
			fmt.Fprintf(progress, "round %d/%d  %-10s registration seen by %d watchers p50 %v p99 %v; re-registered after an expiry %v (max %v)\n",
				round, cfg.Rounds, impl, cfg.Watchers, p50.Round(time.Microsecond), p99.Round(time.Microsecond), re.Round(time.Microsecond), reMax.Round(time.Microsecond))
		}
	}
	res := &DiscoveryResults{Cfg: cfg, Impls: impls, PropagateP50: map[string]time.Duration{}, PropagateP99: map[string]time.Duration{},
		Reregister: map[string]time.Duration{}, ReregMax: map[string]time.Duration{}}
	for _, impl := range impls {
		res.PropagateP50[impl], res.PropagateP99[impl] = median(p50s[impl]), median(p99s[impl])
		res.Reregister[impl], res.ReregMax[impl] = median(rr[impl]), median(rm[impl])
	}
	return res, nil
}

// Markdown renders the results with the ratio of Curator's to zkrecipes'
// (above 1: zkrecipes is faster).
func (r *DiscoveryResults) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d rounds; each round %d registrations (after %d to warm up), each seen by %d caches on sessions of their own, and %d expiries of the registrar's session (after one).\n\n",
		r.Cfg.Rounds, r.Cfg.Registrations, propagateWarmUp, r.Cfg.Watchers, r.Cfg.Expiries)
	b.WriteString("| scenario | zkrecipes | Curator | Curator ÷ zkrecipes |\n|---|---:|---:|---:|\n")
	row := func(name string, m map[string]time.Duration) {
		z, c := m["zkrecipes"], m["Curator"]
		if _, ok := m["Curator"]; !ok {
			fmt.Fprintf(&b, "| %s | %v | | |\n", name, z.Round(time.Microsecond))
			return
		}
		fmt.Fprintf(&b, "| %s | %v | %v | %.2f |\n", name, z.Round(time.Microsecond), c.Round(time.Microsecond), float64(c)/float64(z))
	}
	row("registration → every watcher's cache has it, p50", r.PropagateP50)
	row("registration → every watcher's cache has it, p99", r.PropagateP99)
	row("after an expiry: the registrar's new session → a watcher has the instance again, median", r.Reregister)
	row("the same, slowest of the round", r.ReregMax)
	return b.String()
}

// propagateWarmUp is how many registrations come before the measured
// ones, in the Curator driver (for its JVM) and here alike.
const propagateWarmUp = 20

// runPropagate has watchers caches of one service, each on a session of
// its own (watcher i on server i mod count), and a registrar on the first
// server; each registration (and its unregistration, which is waited for
// too) is timed from the Register call to each cache's Added event, after
// propagateWarmUp registrations. It returns the p50 and p99 over every
// watcher and measured registration.
func runPropagate(ctx context.Context, servers []string, base string, watchers, registrations int) (p50, p99 time.Duration, err error) {
	var lats []time.Duration
	type seen struct {
		id    string
		added bool
		at    time.Time
	}
	seenc := make(chan seen, watchers*4)
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i := range watchers {
		c, err := openClient(ctx, pin(servers, i))
		if err != nil {
			return 0, 0, err
		}
		defer c.Close()
		d, err := discovery.New(c, base)
		if err != nil {
			return 0, 0, err
		}
		sc, err := d.Cache("bench")
		if err != nil {
			return 0, 0, err
		}
		defer sc.Close()
		events, err := sc.Listen(wctx)
		if err != nil {
			return 0, 0, err
		}
		select {
		case <-sc.Initialized():
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range events {
				now := time.Now()
				switch ev.Type {
				case discovery.Added, discovery.Removed:
					select {
					case seenc <- seen{ev.Instance.ID, ev.Type == discovery.Added, now}:
					case <-wctx.Done():
						return
					}
				}
			}
		}()
	}
	rc, err := openClient(ctx, servers[:1])
	if err != nil {
		return 0, 0, err
	}
	defer rc.Close()
	d, err := discovery.New(rc, base)
	if err != nil {
		return 0, 0, err
	}
	wait := func(id string, added bool) ([]time.Time, error) {
		var ats []time.Time
		timeout := time.After(60 * time.Second)
		for len(ats) < watchers {
			select {
			case s := <-seenc:
				if s.id == id && s.added == added {
					ats = append(ats, s.at)
				}
			case <-timeout:
				return nil, fmt.Errorf("%d of %d watchers saw %s", len(ats), watchers, id)
			}
		}
		return ats, nil
	}
	for r := -propagateWarmUp; r < registrations; r++ {
		id := fmt.Sprintf("i%d", r+propagateWarmUp)
		start := time.Now()
		reg, err := d.Register(ctx, discovery.Instance{Name: "bench", ID: id, Address: "10.0.0.1", Port: 8080})
		if err != nil {
			return 0, 0, err
		}
		ats, err := wait(id, true)
		if err != nil {
			return 0, 0, err
		}
		for _, at := range ats {
			if r >= 0 {
				lats = append(lats, at.Sub(start))
			}
		}
		if err := reg.Close(ctx); err != nil {
			return 0, 0, err
		}
		if _, err := wait(id, false); err != nil {
			return 0, 0, err
		}
	}
	slices.Sort(lats)
	return quantile(lats, 0.5), quantile(lats, 0.99), nil
}

// runReregister has a registrar (a dynamic instance) connected through a
// proxy to the first server and a cache on another; each round cuts the
// registrar off until the server expires its session, lets it through,
// and times from its new session (Reconnected, as a listener hears it) to
// the cache's Added, after one expiry to warm up. It returns the median
// and the slowest.
func runReregister(ctx context.Context, servers []string, base string, rounds int, timeout time.Duration) (med, slowest time.Duration, err error) {
	proxy, err := zkserver.NewProxy(servers[:1])
	if err != nil {
		return 0, 0, err
	}
	defer proxy.Close()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	rc, err := connection.Open(octx, proxy.Servers(), connection.WithSessionTimeout(timeout))
	cancel()
	if err != nil {
		return 0, 0, err
	}
	defer rc.Close()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	reconnected := make(chan time.Time, 16)
	states := rc.Listen(lctx)
	go func() {
		for s := range states {
			if s == connection.Reconnected {
				select {
				case reconnected <- time.Now():
				default:
				}
			}
		}
	}()
	wc, err := openClient(ctx, pin(servers, 1))
	if err != nil {
		return 0, 0, err
	}
	defer wc.Close()
	wd, err := discovery.New(wc, base)
	if err != nil {
		return 0, 0, err
	}
	sc, err := wd.Cache("bench")
	if err != nil {
		return 0, 0, err
	}
	defer sc.Close()
	events, err := sc.Listen(lctx)
	if err != nil {
		return 0, 0, err
	}
	next := func(want discovery.EventType) (time.Time, error) {
		timeout := time.After(60 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return time.Time{}, errors.New("the cache closed")
				}
				if ev.Type == want {
					return time.Now(), nil
				}
			case <-timeout:
				return time.Time{}, fmt.Errorf("no %v within 60 s", want)
			}
		}
	}
	d, err := discovery.New(rc, base)
	if err != nil {
		return 0, 0, err
	}
	reg, err := d.Register(ctx, discovery.Instance{Name: "bench", ID: "r", Address: "10.0.0.1", Port: 8080})
	if err != nil {
		return 0, 0, err
	}
	defer reg.Close(context.Background())
	if _, err := next(discovery.Added); err != nil {
		return 0, 0, err
	}
	var lats []time.Duration
	for r := -1; r < rounds; r++ { // one expiry to warm up, as the driver does
		proxy.Blackhole()
		if _, err := next(discovery.Removed); err != nil {
			return 0, 0, err
		}
		for len(reconnected) > 0 {
			<-reconnected
		}
		proxy.Restore()
		seen, err := next(discovery.Added)
		if err != nil {
			return 0, 0, err
		}
		var back time.Time
		select {
		case back = <-reconnected:
		case <-time.After(30 * time.Second):
			return 0, 0, errors.New("no Reconnected after the expiry")
		}
		if r >= 0 {
			lats = append(lats, seen.Sub(back))
		}
	}
	slices.Sort(lats)
	return lats[len(lats)/2], lats[len(lats)-1], nil
}
