package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// The cache scenarios: the zkrecipes cache (recipes/cache), with one-shot
// watches and with one recursive watch (WithRecursiveWatch), beside Curator
// 5.4's CuratorCache (a persistent recursive watch on a 3.6+ server) and
// TreeCache, and Kazoo 2.8's TreeCache, on the same trees in one run.

// The implementations, as the tables name them.
const (
	CacheZK = "zkrecipes"
	// CacheZKRecursive is the zkrecipes cache with WithRecursiveWatch:
	// one persistent recursive watch, as CuratorCache.
	CacheZKRecursive = "zkrecipes, recursive watch"
	CacheCurator     = "CuratorCache"
	CacheTree        = "Curator TreeCache"
	CacheKazoo       = "Kazoo TreeCache"
	// The lag baselines: a bare go-zookeeper GetW on the node, re-armed
	// after each notification; the notification, and the re-arming read's
	// return (the new data in hand).
	RawWatch     = "raw watch notification"
	RawWatchRead = "raw watch + read"
)

// CacheConfig says how to measure the caches.
type CacheConfig struct {
	Servers []string
	Peers   []string // "Curator" (CuratorCache and TreeCache), "Kazoo" (TreeCache)
	// Sizes are the trees whose first full view is timed, in nodes (each
	// about that: the root, up to 100 directories, their leaves).
	Sizes []int
	// Rounds of the first views (after a warm-up round); results are
	// medians. Trees of BigSize nodes or more are loaded in BigRounds
	// rounds only.
	Rounds, BigRounds int
	BigSize           int
	// ServerHeap measures what each first view adds to its server's Java
	// heap: a full collection before and after the load, with jcmd (a
	// local ensemble).
	ServerHeap bool
	// LagSamples writes of one node, LagInterval apart, for the lag.
	LagSamples  int
	LagInterval time.Duration
	// Writers goroutines set WriteNodes nodes at full speed; events are
	// counted over Duration after a second of warm-up.
	Writers, WriteNodes int
	Duration            time.Duration
	// Changes nodes are set while a cache is cut off, for the reconnect.
	Changes  int
	Cleanup  bool // delete the trees at the end
	Progress io.Writer
}

// Percentiles of a latency.
type Percentiles struct {
	P50, P99 time.Duration
	N        int
}

// Lag is the time from a set to the event of its version, from the set's
// reply (the writer sees it committed) and from its call: on a server
// other than the writer's, a notification can come before the reply (its
// p50 from the reply is about 0), so ratios to the raw notification are
// taken from the call.
type Lag struct{ Reply, Call Percentiles }

// LagPass is a cache's lag and the raw baselines (RawWatch, RawWatchRead)
// measured on the same writes: paired, so that a slow moment of the
// machine weighs on both.
type LagPass struct{ Cache, Raw, RawRead Lag }

// CacheResults are what the cache scenarios measured, by implementation.
type CacheResults struct {
	Cfg   CacheConfig
	Impls []string
	Nodes []int // nodes of each of Cfg.Sizes' trees, root included

	FirstView map[string]map[int]time.Duration // impl → tree nodes → median
	// RawView is the floor of a first view: the same reads with nothing
	// kept (rawFirstView), by tree nodes; median.
	RawView map[int]time.Duration
	// RawCPU is the CPU the servers used meanwhile, where they are this
	// process's children (a local ensemble); median.
	RawCPU  map[int]time.Duration
	Seen    map[string]map[int]int     // nodes in the first view when it said it was whole (fewest over the rounds)
	Heap    map[string]map[int]float64 // bytes per node in the view: Go heap, Java heap used after GC; 0 for Kazoo
	RSS     map[string]map[int]float64 // bytes per node in the view: the process's resident memory
	Watches map[string]map[int]float64 // server watches per node in the view
	// ServerHeap is what the caches' server's Java heap gained per node
	// in the view, after a full collection (jcmd); absent where it was
	// not measured (an external ensemble, no jcmd).
	ServerHeap map[string]map[int]float64

	Lag map[string]LagPass

	Events     map[string]float64       // changed events per second, writer at full speed
	Writes     map[string]float64       // the writer's sets per second meanwhile
	CatchUp    map[string]time.Duration // from the writer's stop until the view held every last version
	Consistent map[string]bool

	Packets   map[string]int64 // packets the server received for a same-session reconnect
	Recovered map[string]bool  // the view held the changes made while cut off
}

// RunCache runs the cache scenarios.
func RunCache(ctx context.Context, cfg CacheConfig) (res *CacheResults, err error) {
	if cfg.Rounds < 1 || cfg.BigRounds < 1 || len(cfg.Sizes) == 0 || cfg.LagSamples < 1 || cfg.LagInterval <= 0 ||
		cfg.Writers < 1 || cfg.WriteNodes < 1 || cfg.Duration <= 0 || cfg.Changes < 1 {
		return nil, errors.New("bench: the cache scenarios need positive rounds, sizes, samples, interval, writers, nodes, duration and changes")
	}
	progress := orDiscard(cfg.Progress)
	impls := []string{CacheZK, CacheZKRecursive}
	for _, p := range cfg.Peers {
		switch p {
		case "Curator":
			impls = append(impls, CacheCurator, CacheTree)
		case "Kazoo":
			impls = append(impls, CacheKazoo)
		default:
			return nil, fmt.Errorf("bench: no cache peer %q", p)
		}
	}
	sides := map[string]cacheSide{}
	defer func() {
		for _, s := range sides {
			if cerr := s.close(); err == nil && cerr != nil {
				err = cerr
			}
		}
	}()
	for _, impl := range impls {
		s, err := newCacheSide(ctx, impl, cfg.Servers)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", impl, err)
		}
		sides[impl] = s
	}
	w, err := openPlain(pin(cfg.Servers, 0))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	root := fmt.Sprintf("/zkrecipes-bench-cache/%d", time.Now().UnixNano())
	if cfg.Cleanup {
		defer func() {
			if derr := deleteTree(w.conn, root); err == nil && derr != nil {
				err = derr
			}
		}()
	}
	start := time.Now()
	trees, nodes, err := buildCacheTrees(w.conn, root, cfg.Sizes)
	if err != nil {
		return nil, err
	}
	live, lagNode, evNodes, err := buildLive(w.conn, root, cfg.WriteNodes)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "cache trees of %v nodes built in %v\n", nodes, time.Since(start).Round(time.Millisecond))

	res = &CacheResults{Cfg: cfg, Impls: impls, Nodes: nodes,
		FirstView: map[string]map[int]time.Duration{}, RawView: map[int]time.Duration{}, RawCPU: map[int]time.Duration{}, Seen: map[string]map[int]int{}, Heap: map[string]map[int]float64{},
		RSS: map[string]map[int]float64{}, Watches: map[string]map[int]float64{}, ServerHeap: map[string]map[int]float64{},
		Lag: map[string]LagPass{}, Events: map[string]float64{}, Writes: map[string]float64{},
		CatchUp: map[string]time.Duration{}, Consistent: map[string]bool{},
		Packets: map[string]int64{}, Recovered: map[string]bool{},
	}
	type view struct {
		t                  time.Duration
		heap, rss, watches float64
		serverHeap         float64
		serverHeapOK       bool
		nodes              int
	}
	views := map[string]map[int][]view{}
	raws, rawCPU := map[int][]time.Duration{}, map[int][]time.Duration{}
	one := pin(cfg.Servers, 1) // the caches' server; the writer is on the first
	for round := 0; round <= cfg.Rounds; round++ {
		for i, size := range cfg.Sizes {
			if round == 0 && i > 0 || round > cfg.BigRounds && size >= cfg.BigSize {
				continue // the warm-up loads the first tree alone
			}
			for _, impl := range impls {
				s := sides[impl]
				v, err := firstView(ctx, s, one, cfg.Servers, trees[i], cfg.ServerHeap)
				if err != nil {
					return nil, fmt.Errorf("%s, first view of %d nodes: %w", impl, nodes[i], err)
				}
				if v.nodes <= 0 || v.nodes > nodes[i] {
					return nil, fmt.Errorf("%s: %d nodes in the first view of a tree of %d", impl, v.nodes, nodes[i])
				}
				if round == 0 {
					continue
				}
				if views[impl] == nil {
					views[impl] = map[int][]view{}
				}
				// Per node in the view: a view that said it was whole
				// without every node (CuratorCache beyond 65,535 reads
				// in flight) is reported as such.
				n := float64(v.nodes)
				views[impl][nodes[i]] = append(views[impl][nodes[i]], view{v.elapsed, float64(v.heap) / n, float64(v.rss) / n, float64(v.watches) / n, float64(v.serverHeap) / n, v.serverHeapOK, v.nodes})
				fmt.Fprintf(progress, "round %d/%d  %-17s first view of %d nodes  %v  %d nodes in it  heap %.0f B/node  RSS %.0f B/node  %.2f watches/node  server heap %.0f B/node\n",
					round, cfg.Rounds, impl, nodes[i], roundDuration(v.elapsed), v.nodes, float64(v.heap)/n, float64(v.rss)/n, float64(v.watches)/n, float64(v.serverHeap)/n)
			}
			cpu0, cpuOK := serversCPU()
			raw, err := rawFirstView(one, trees[i], nodes[i], cache.DefaultConcurrency)
			if err != nil {
				return nil, fmt.Errorf("raw reads of %d nodes: %w", nodes[i], err)
			}
			cpu1, _ := serversCPU()
			if round > 0 {
				raws[nodes[i]] = append(raws[nodes[i]], raw)
				cpu := ""
				if cpuOK {
					rawCPU[nodes[i]] = append(rawCPU[nodes[i]], cpu1-cpu0)
					cpu = fmt.Sprintf(", the servers' CPU %v", roundDuration(cpu1-cpu0))
				}
				fmt.Fprintf(progress, "round %d/%d  %-17s the reads of a first view of %d nodes, nothing kept  %v%s\n", round, cfg.Rounds, "raw reads", nodes[i], roundDuration(raw), cpu)
			}
		}
		if round == 0 {
			fmt.Fprintln(progress, "warm-up     done")
		}
	}
	for n, ts := range raws {
		res.RawView[n] = median(ts)
	}
	for n, ts := range rawCPU {
		res.RawCPU[n] = median(ts)
	}
	for impl, byN := range views {
		res.FirstView[impl], res.Heap[impl], res.RSS[impl], res.Watches[impl], res.Seen[impl] = map[int]time.Duration{}, map[int]float64{}, map[int]float64{}, map[int]float64{}, map[int]int{}
		for n, vs := range byN {
			var ts []time.Duration
			var hs, rs, ws, shs []float64
			seen := n
			for _, v := range vs {
				ts, hs, rs, ws = append(ts, v.t), append(hs, v.heap), append(rs, v.rss), append(ws, v.watches)
				if v.serverHeapOK {
					shs = append(shs, v.serverHeap)
				}
				seen = min(seen, v.nodes)
			}
			res.FirstView[impl][n], res.Heap[impl][n], res.RSS[impl][n], res.Watches[impl][n], res.Seen[impl][n] = median(ts), median(hs), median(rs), median(ws), seen
			if len(shs) > 0 {
				if res.ServerHeap[impl] == nil {
					res.ServerHeap[impl] = map[int]float64{}
				}
				res.ServerHeap[impl][n] = median(shs)
			}
		}
	}

	// The lag, then events under a writer at full speed, on the live tree.
	for _, impl := range impls {
		s := sides[impl]
		if _, err := s.connect(ctx, one); err != nil {
			return nil, fmt.Errorf("%s: %w", impl, err)
		}
		if _, err := s.load(ctx, live); err != nil {
			return nil, fmt.Errorf("%s: %w", impl, err)
		}
		lags, err := cacheLag(ctx, s, w.conn, one, lagNode, cfg.LagSamples, cfg.LagInterval)
		if err != nil {
			return nil, fmt.Errorf("%s lag: %w", impl, err)
		}
		res.Lag[impl] = lags
		fs, err := fullSpeed(ctx, s, w.conn, evNodes, cfg.Writers, cfg.Duration)
		if err != nil {
			return nil, fmt.Errorf("%s at full speed: %w", impl, err)
		}
		res.Events[impl], res.Writes[impl], res.CatchUp[impl], res.Consistent[impl] = fs.events, fs.writes, fs.catchUp, fs.behind == 0
		if err := s.unload(); err != nil {
			return nil, fmt.Errorf("%s: %w", impl, err)
		}
		printLag(progress, impl, lags.Cache)
		printLag(progress, "  "+RawWatch, lags.Raw)
		printLag(progress, "  "+RawWatchRead, lags.RawRead)
		fmt.Fprintf(progress, "full speed  %-24s %.0f events/s under %.0f sets/s; %s\n", impl, fs.events, fs.writes, consistency(fs.behind == 0, fs.catchUp))
	}

	// A same-session reconnect of a cache of the first tree, with Changes
	// nodes set while it was cut off.
	for _, impl := range impls {
		p, ok, err := reconnectCost(ctx, sides[impl], w.conn, one, trees[0], cfg.Changes)
		if err != nil {
			return nil, fmt.Errorf("%s reconnect: %w", impl, err)
		}
		res.Packets[impl], res.Recovered[impl] = p, ok
		fmt.Fprintf(progress, "reconnect   %-24s %d packets received by the server, %d nodes set meanwhile (view caught up: %v)\n", impl, p, cfg.Changes, ok)
	}
	return res, nil
}

func consistency(ok bool, catchUp time.Duration) string {
	if !ok {
		return "not consistent"
	}
	return fmt.Sprintf("consistent %v after the writer stopped", roundDuration(catchUp))
}

// roundDuration rounds d for a table: to 10 ms from a second, 10 µs from
// a millisecond, 1 µs below.
func roundDuration(d time.Duration) time.Duration {
	switch a := max(d, -d); {
	case a >= time.Second:
		return d.Round(10 * time.Millisecond)
	case a >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
