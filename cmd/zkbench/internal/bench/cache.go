package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// The cache scenarios: the zkrecipes cache (recipes/cache) beside Curator
// 5.4's CuratorCache (a persistent recursive watch on a 3.6+ server) and
// TreeCache, and Kazoo 2.8's TreeCache, on the same trees in one run.

// The implementations, as the tables name them.
const (
	CacheZK      = "zkrecipes"
	CacheCurator = "CuratorCache"
	CacheTree    = "Curator TreeCache"
	CacheKazoo   = "Kazoo TreeCache"
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

	Lag map[string]LagPass

	Events     map[string]float64       // changed events per second, writer at full speed
	Writes     map[string]float64       // the writer's sets per second meanwhile
	CatchUp    map[string]time.Duration // from the writer's stop until the view held every last version
	Consistent map[string]bool

	Packets   map[string]int64 // packets the server received for a same-session reconnect
	Recovered map[string]bool  // the view held the changes made while cut off
}

// cacheSide is one implementation driven through the scenarios: this
// process's zkrecipes cache, or a peer's driver.
type cacheSide interface {
	// connect opens a session and returns the heap in use (0 if not
	// known) after a garbage collection.
	connect(ctx context.Context, servers []string) (heap int64, err error)
	// load starts a cache of path and waits for its first full view.
	load(ctx context.Context, path string) (loaded, error)
	// count returns the changed events since the load.
	count() (int64, error)
	// track records the changed events of path, tracked returns them.
	track(path string) error
	tracked() ([]stamp, error)
	// verify waits until the view holds every path at its version, up to
	// timeout; behind is how many did not get there.
	verify(timeout time.Duration, want []nodeVersion) (elapsed time.Duration, behind int, err error)
	// unload closes the cache and its session.
	unload() error
	pid() int
	close() error
}

type loaded struct {
	elapsed time.Duration // start to the first full view
	nodes   int
	heap    int64
}

// stamp is an event of a version of a node at a time (wall clock, ns:
// the writer and the peers are different processes on one machine).
type stamp struct {
	version int32
	at      int64
}

type nodeVersion struct {
	path    string
	version int32
}

// RunCache runs the cache scenarios.
func RunCache(ctx context.Context, cfg CacheConfig) (res *CacheResults, err error) {
	if cfg.Rounds < 1 || cfg.BigRounds < 1 || len(cfg.Sizes) == 0 || cfg.LagSamples < 1 || cfg.LagInterval <= 0 ||
		cfg.Writers < 1 || cfg.WriteNodes < 1 || cfg.Duration <= 0 || cfg.Changes < 1 {
		return nil, errors.New("bench: the cache scenarios need positive rounds, sizes, samples, interval, writers, nodes, duration and changes")
	}
	progress := orDiscard(cfg.Progress)
	impls := []string{CacheZK}
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
		RSS: map[string]map[int]float64{}, Watches: map[string]map[int]float64{},
		Lag: map[string]LagPass{}, Events: map[string]float64{}, Writes: map[string]float64{},
		CatchUp: map[string]time.Duration{}, Consistent: map[string]bool{},
		Packets: map[string]int64{}, Recovered: map[string]bool{},
	}
	type view struct {
		t                  time.Duration
		heap, rss, watches float64
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
				v, err := firstView(ctx, s, one, cfg.Servers, trees[i])
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
				views[impl][nodes[i]] = append(views[impl][nodes[i]], view{v.elapsed, float64(v.heap) / n, float64(v.rss) / n, float64(v.watches) / n, v.nodes})
				fmt.Fprintf(progress, "round %d/%d  %-17s first view of %d nodes  %v  %d nodes in it  heap %.0f B/node  RSS %.0f B/node  %.2f watches/node\n",
					round, cfg.Rounds, impl, nodes[i], roundDuration(v.elapsed), v.nodes, float64(v.heap)/n, float64(v.rss)/n, float64(v.watches)/n)
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
			var hs, rs, ws []float64
			seen := n
			for _, v := range vs {
				ts, hs, rs, ws = append(ts, v.t), append(hs, v.heap), append(rs, v.rss), append(ws, v.watches)
				seen = min(seen, v.nodes)
			}
			res.FirstView[impl][n], res.Heap[impl][n], res.RSS[impl][n], res.Watches[impl][n], res.Seen[impl][n] = median(ts), median(hs), median(rs), median(ws), seen
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

// cacheTreeShape is how a tree of about size nodes is made: the root,
// dirs directories under it, leaves leaves under each.
func cacheTreeShape(size int) (dirs, leaves int) {
	dirs = max(1, min(100, int(math.Sqrt(float64(size)))))
	leaves = max(0, (size-2)/dirs) // (size-1-dirs)/dirs rounded up: 10,000 gives 100 × 99, 10,001 nodes
	return dirs, leaves
}

// nodeData is every node's data: 20 bytes.
var nodeData = []byte("0123456789abcdefghij")

// buildCacheTrees creates a tree per size under root, by multis of up to
// 1,000 creates, several in flight.
func buildCacheTrees(conn *zk.Conn, root string, sizes []int) (paths []string, nodes []int, err error) {
	if err := createParents(conn, root); err != nil {
		return nil, nil, err
	}
	var leaves []string
	for i, size := range sizes {
		t := fmt.Sprintf("%s/t%d", root, i)
		d, l := cacheTreeShape(size)
		top := []string{t}
		for j := range d {
			dir := fmt.Sprintf("%s/d%03d", t, j)
			top = append(top, dir)
			for k := range l {
				leaves = append(leaves, fmt.Sprintf("%s/n%04d", dir, k))
			}
		}
		if err := createAll(conn, top); err != nil {
			return nil, nil, err
		}
		paths, nodes = append(paths, t), append(nodes, 1+d+d*l)
	}
	return paths, nodes, createAll(conn, leaves)
}

// buildLive creates the tree of the lag and full-speed scenarios: a node
// to set one write at a time, and n nodes to set at full speed.
func buildLive(conn *zk.Conn, root string, n int) (live, lagNode string, ev []string, err error) {
	live = root + "/live"
	lagNode, dir := live+"/lag", live+"/ev"
	if err := createAll(conn, []string{live, lagNode, dir}); err != nil {
		return "", "", nil, err
	}
	for i := range n {
		ev = append(ev, fmt.Sprintf("%s/n%04d", dir, i))
	}
	return live, lagNode, ev, createAll(conn, ev)
}

// createParents creates p and its parents where missing.
func createParents(conn *zk.Conn, p string) error {
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if _, err := conn.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
	}
	return nil
}

// createAll creates paths (parents before children, in order for each
// batch) by multis of 1,000, four in flight.
func createAll(conn *zk.Conn, paths []string) error {
	const batch = 1000
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		slots    = make(chan struct{}, 4)
	)
	if len(paths) <= batch {
		return multiCreate(conn, paths)
	}
	// A first batch holding parents of later ones runs alone.
	if err := multiCreate(conn, paths[:batch]); err != nil {
		return err
	}
	for i := batch; i < len(paths); i += batch {
		part := paths[i:min(len(paths), i+batch)]
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := multiCreate(conn, part); err != nil {
				mu.Lock()
				firstErr = cmpErr(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func multiCreate(conn *zk.Conn, paths []string) error {
	ops := make([]any, len(paths))
	for i, p := range paths {
		ops[i] = &zk.CreateRequest{Path: p, Data: nodeData, Acl: zk.WorldACL(zk.PermAll)}
	}
	_, err := conn.Multi(ops...)
	return err
}

// deleteTree deletes p and everything under it, leaves first, by multis.
func deleteTree(conn *zk.Conn, p string) error {
	var order []string
	var walk func(string) error
	walk = func(p string) error {
		kids, _, err := conn.Children(p)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(p + "/" + k); err != nil {
				return err
			}
		}
		order = append(order, p)
		return nil
	}
	if err := walk(p); err != nil {
		return err
	}
	for i := 0; i < len(order); i += 1000 {
		var ops []any
		for _, q := range order[i:min(len(order), i+1000)] {
			ops = append(ops, &zk.DeleteRequest{Path: q, Version: -1})
		}
		if _, err := conn.Multi(ops...); err != nil {
			return err
		}
	}
	return nil
}

// viewCost is one first view and what it cost.
type viewCost struct {
	elapsed            time.Duration
	nodes              int
	heap, rss, watches int64
}

// firstView loads a cache of tree in a fresh session on one, and measures
// the time to the first full view, the memory it added (heap after a
// collection, and the process's RSS) and the watches the servers hold
// for it.
func firstView(ctx context.Context, s cacheSide, one, servers []string, tree string) (viewCost, error) {
	heap0, err := s.connect(ctx, one)
	if err != nil {
		return viewCost{}, err
	}
	ok := false
	defer func() {
		if !ok {
			s.unload()
		}
	}()
	rss0, _, err := procStatus(s.pid())
	if err != nil {
		return viewCost{}, err
	}
	w0, err := mntrSum(servers, []string{"zk_watch_count"})
	if err != nil {
		return viewCost{}, err
	}
	l, err := s.load(ctx, tree)
	if err != nil {
		return viewCost{}, err
	}
	rss1, _, err := procStatus(s.pid())
	if err != nil {
		return viewCost{}, err
	}
	w1, err := mntrSum(servers, []string{"zk_watch_count"})
	if err != nil {
		return viewCost{}, err
	}
	v := viewCost{elapsed: l.elapsed, nodes: l.nodes, rss: rss1 - rss0, watches: w1 - w0}
	if l.heap > 0 {
		v.heap = l.heap - heap0
	}
	ok = true
	return v, s.unload()
}

func printLag(w io.Writer, name string, l Lag) {
	fmt.Fprintf(w, "lag         %-24s from the reply p50 %v  p99 %v; from the call p50 %v  p99 %v  (%d)\n", name,
		roundDuration(l.Reply.P50), roundDuration(l.Reply.P99), roundDuration(l.Call.P50), roundDuration(l.Call.P99), l.Reply.N)
}

// write is when a set was called and when its reply came, wall clock ns.
type write struct{ call, reply int64 }

// rawFirstView makes the reads of a cache's first load of tree, and keeps
// nothing: a plain go-zookeeper session on one, inflight goroutines, GetW
// and ChildrenW of every node, the children found by the listings. The
// floor of a first view with one-shot watches.
func rawFirstView(one []string, tree string, nodes, inflight int) (time.Duration, error) {
	p, err := openPlain(one)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	var (
		work        = make(chan string, nodes+1) // every node is queued once
		outstanding atomic.Int64
		done        = make(chan struct{})
		once        sync.Once
		firstErr    error
		wg          sync.WaitGroup
	)
	finish := func(err error) {
		once.Do(func() { firstErr = err; close(done) })
	}
	start := time.Now()
	outstanding.Store(1)
	work <- tree
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case path := <-work:
					if _, _, _, err := p.conn.GetW(path); err != nil {
						finish(err)
						return
					}
					kids, _, _, err := p.conn.ChildrenW(path)
					if err != nil {
						finish(err)
						return
					}
					if int(outstanding.Add(int64(len(kids)))) > nodes+1 {
						finish(fmt.Errorf("bench: more than %d nodes under %s", nodes, tree))
						return
					}
					for _, k := range kids {
						work <- path + "/" + k
					}
					if outstanding.Add(-1) == 0 {
						finish(nil)
						return
					}
				}
			}
		}()
	}
	<-done
	elapsed := time.Since(start)
	wg.Wait()
	return elapsed, firstErr
}

// serversCPU returns the CPU time the ZooKeeper servers that are this
// process's children (a local ensemble) have used, and false if there are
// none.
func serversCPU() (time.Duration, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	me := strconv.Itoa(os.Getpid())
	var sum time.Duration
	found := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(stat), ") ")
		if f := strings.Fields(rest); len(f) < 2 || f[1] != me {
			continue // not a child of this process
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmd), "QuorumPeerMain") {
			continue
		}
		cpu, err := procCPU(pid)
		if err != nil {
			continue
		}
		sum, found = sum+cpu, true
	}
	return sum, found
}

// pacedWrites sets path n times, interval apart, and returns the times of
// each set by the version it made.
func pacedWrites(ctx context.Context, conn *zk.Conn, path string, n int, interval time.Duration) (map[int32]write, error) {
	writes := make(map[int32]write, n)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for range n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		call := time.Now().UnixNano()
		st, err := conn.Set(path, nodeData, -1)
		if err != nil {
			return nil, err
		}
		writes[st.Version] = write{call, time.Now().UnixNano()}
	}
	return writes, nil
}

// lagsOf matches events to the writes by version: an event's lag is its
// time less the write's reply, or call. Versions seen on one side only
// are left out (a cache may see two quick sets as one change).
func lagsOf(writes map[int32]write, events []stamp) Lag {
	var reply, call []time.Duration
	for _, e := range events {
		if w, ok := writes[e.version]; ok {
			reply, call = append(reply, time.Duration(e.at-w.reply)), append(call, time.Duration(e.at-w.call))
		}
	}
	return Lag{Reply: percentiles(reply), Call: percentiles(call)}
}

// percentiles returns p50 and p99 of xs.
func percentiles(xs []time.Duration) Percentiles {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Percentiles{P50: quantile(s, 0.5), P99: quantile(s, 0.99), N: len(s)}
}

// rawWatcher is the baseline of the lag: a plain go-zookeeper session
// that watches a node with GetW and re-arms the watch after each
// notification, noting when each came and when the re-arming read
// returned.
type rawWatcher struct {
	p           *plain
	done        chan error
	fired, read []stamp
}

func startRawWatch(one []string, path string) (*rawWatcher, error) {
	p, err := openPlain(one)
	if err != nil {
		return nil, err
	}
	_, st, ch, err := p.conn.GetW(path)
	if err != nil {
		p.Close()
		return nil, err
	}
	r := &rawWatcher{p: p, done: make(chan error, 1)}
	go func() {
		armed := st.Version
		for {
			ev := <-ch
			at := time.Now().UnixNano()
			if ev.Type != zk.EventNodeDataChanged {
				r.done <- nil // the session closed
				return
			}
			r.fired = append(r.fired, stamp{armed + 1, at})
			_, st, c, err := p.conn.GetW(path)
			if err != nil {
				r.done <- err
				return
			}
			r.read = append(r.read, stamp{st.Version, time.Now().UnixNano()})
			armed, ch = st.Version, c
		}
	}()
	return r, nil
}

// stop closes the session and returns what the watcher noted.
func (r *rawWatcher) stop() (fired, read []stamp, err error) {
	r.p.Close()
	err = <-r.done
	return r.fired, r.read, err
}

// cacheLag measures the lag of a loaded cache, from a set to the cache's
// changed event of that version, with the raw baselines on the same
// writes.
func cacheLag(ctx context.Context, s cacheSide, writer *zk.Conn, one []string, path string, n int, interval time.Duration) (LagPass, error) {
	raw, err := startRawWatch(one, path)
	if err != nil {
		return LagPass{}, err
	}
	if err := s.track(path); err != nil {
		raw.stop()
		return LagPass{}, err
	}
	writes, err := pacedWrites(ctx, writer, path, n, interval)
	if err != nil {
		raw.stop()
		return LagPass{}, err
	}
	time.Sleep(200 * time.Millisecond)
	events, err := s.tracked()
	fired, read, rerr := raw.stop()
	if err = cmpErr(err, rerr); err != nil {
		return LagPass{}, err
	}
	return LagPass{Cache: lagsOf(writes, events), Raw: lagsOf(writes, fired), RawRead: lagsOf(writes, read)}, nil
}

type fullSpeedResult struct {
	events, writes float64
	catchUp        time.Duration
	behind         int
}

// fullSpeed has writers goroutines set nodes in turn as fast as the
// writer's session answers (requests pipelined on it), counts the
// cache's changed events over d after a second of warm-up, stops the
// writers, and waits (up to a minute) until the view holds every node's
// last version.
func fullSpeed(ctx context.Context, s cacheSide, conn *zk.Conn, nodes []string, writers int, d time.Duration) (fullSpeedResult, error) {
	versions := make([]atomic.Int32, len(nodes))
	var (
		next, sets atomic.Int64
		stop       atomic.Bool
		wg         sync.WaitGroup
		errOnce    sync.Once
		firstErr   error
	)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				i := int(next.Add(1)-1) % len(nodes)
				st, err := conn.Set(nodes[i], nodeData, -1)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				sets.Add(1)
				for v := versions[i].Load(); st.Version > v && !versions[i].CompareAndSwap(v, st.Version); v = versions[i].Load() {
				}
			}
		}()
	}
	finish := func() { stop.Store(true); wg.Wait() }
	time.Sleep(time.Second)
	e0, err := s.count()
	if err != nil {
		finish()
		return fullSpeedResult{}, err
	}
	s0, t0 := sets.Load(), time.Now()
	time.Sleep(d)
	e1, err := s.count()
	s1, elapsed := sets.Load(), time.Since(t0)
	finish()
	if err != nil {
		return fullSpeedResult{}, err
	}
	if firstErr != nil {
		return fullSpeedResult{}, firstErr
	}
	want := make([]nodeVersion, len(nodes))
	for i, p := range nodes {
		want[i] = nodeVersion{p, versions[i].Load()}
	}
	catchUp, behind, err := s.verify(time.Minute, want)
	if err != nil {
		return fullSpeedResult{}, err
	}
	return fullSpeedResult{events: float64(e1-e0) / elapsed.Seconds(), writes: float64(s1-s0) / elapsed.Seconds(), catchUp: catchUp, behind: behind}, nil
}

// reconnectCost loads a cache of tree through a proxy to one, cuts the
// proxy, sets changes leaves meanwhile, restores it, and counts the
// packets the server receives from then until the view holds the changes
// and the server has been quiet for a second (the reconnection, the
// watches registered again, pings, and every read).
func reconnectCost(ctx context.Context, s cacheSide, writer *zk.Conn, one []string, tree string, changes int) (packets int64, caughtUp bool, err error) {
	proxy, err := zkserver.NewProxy(one)
	if err != nil {
		return 0, false, err
	}
	defer proxy.Close()
	if _, err := s.connect(ctx, proxy.Servers()); err != nil {
		return 0, false, err
	}
	unloaded := false
	defer func() {
		if !unloaded {
			s.unload()
		}
	}()
	if _, err := s.load(ctx, tree); err != nil {
		return 0, false, err
	}
	leaves, err := spreadLeaves(writer, tree, changes)
	if err != nil {
		return 0, false, err
	}
	probe := &packetProbe{servers: one}
	if _, err := probe.quiet(ctx, time.Second); err != nil {
		return 0, false, err
	}
	proxy.Cut()
	time.Sleep(200 * time.Millisecond)
	want := make([]nodeVersion, len(leaves))
	for i, p := range leaves {
		st, err := writer.Set(p, nodeData, -1)
		if err != nil {
			return 0, false, err
		}
		want[i] = nodeVersion{p, st.Version}
	}
	time.Sleep(800 * time.Millisecond)
	p0, err := probe.read()
	if err != nil {
		return 0, false, err
	}
	proxy.Restore()
	_, behind, err := s.verify(time.Minute, want)
	if err != nil {
		return 0, false, err
	}
	p1, err := probe.quiet(ctx, time.Second)
	if err != nil {
		return 0, false, err
	}
	unloaded = true
	return p1 - p0, behind == 0, s.unload()
}

// spreadLeaves returns n leaves of tree, from different directories where
// there are enough.
func spreadLeaves(conn *zk.Conn, tree string, n int) ([]string, error) {
	dirs, _, err := conn.Children(tree)
	if err != nil {
		return nil, err
	}
	slices.Sort(dirs)
	var out []string
	for round := 0; len(out) < n; round++ {
		added := false
		for _, d := range dirs {
			leaves, _, err := conn.Children(tree + "/" + d)
			if err != nil {
				return nil, err
			}
			slices.Sort(leaves)
			if round < len(leaves) && len(out) < n {
				out, added = append(out, tree+"/"+d+"/"+leaves[round]), true
			}
		}
		if !added {
			return nil, fmt.Errorf("bench: fewer than %d leaves under %s", n, tree)
		}
	}
	return out, nil
}

// packetProbe reads the packets servers received, less those of its own
// reads: ZooKeeper counts a four-letter command (mntr) as a packet
// received, one per server asked.
type packetProbe struct {
	servers []string
	polls   int64
}

func (p *packetProbe) read() (int64, error) {
	n, err := packetsReceived(p.servers)
	p.polls++
	return n - p.polls*int64(len(p.servers)), err
}

// quiet waits until the packets the servers received have not changed
// for d (at most a minute) and returns their count.
func (p *packetProbe) quiet(ctx context.Context, d time.Duration) (int64, error) {
	last, since := int64(-1), time.Now()
	for deadline := time.Now().Add(time.Minute); ; {
		n, err := p.read()
		if err != nil {
			return 0, err
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= d || time.Now().After(deadline) {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newCacheSide starts impl: this process's cache, or a peer's driver.
func newCacheSide(ctx context.Context, impl string, servers []string) (cacheSide, error) {
	var (
		p    *peer
		kind string
	)
	switch impl {
	case CacheZK:
		return &localCache{}, nil
	case CacheCurator:
		p, kind = curatorPeer, "curatorcache"
	case CacheTree:
		p, kind = curatorPeer, "treecache"
	case CacheKazoo:
		p, kind = kazooPeer, "treecache"
	default:
		return nil, fmt.Errorf("bench: no cache %q", impl)
	}
	d, err := p.start(ctx, servers, "/", "cache", kind)
	if err != nil {
		return nil, err
	}
	if _, err := d.next("READY"); err != nil {
		d.cmd.Process.Kill()
		return nil, err
	}
	return &remoteCache{d: d}, nil
}

// localCache is the zkrecipes cache, in this process.
type localCache struct {
	client  *connection.Client
	c       *cache.Cache
	cancel  context.CancelFunc
	done    chan struct{} // the listener's goroutine ended
	changes atomic.Int64

	mu        sync.Mutex
	trackPath string
	stamps    []stamp
}

// goHeap returns the heap in use after a collection.
func goHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// settledHeap is goHeap once what went before is gone: a closed
// go-zookeeper session lets go of its watches from a goroutine of its own
// (hundreds of thousands after a large tree), and a baseline taken before
// that counts them. It waits (at most 10 s) until two collections 100 ms
// apart find within 0.5% of each other.
func settledHeap() int64 {
	prev := goHeap()
	for range 100 {
		time.Sleep(100 * time.Millisecond)
		cur := goHeap()
		if d := prev - cur; d >= 0 && d <= prev/200 || d < 0 && -d <= prev/200 {
			return cur
		}
		prev = cur
	}
	return prev
}

func (l *localCache) connect(ctx context.Context, servers []string) (int64, error) {
	c, err := openClient(ctx, servers)
	if err != nil {
		return 0, err
	}
	l.client = c
	return settledHeap(), nil
}

func (l *localCache) load(ctx context.Context, path string) (loaded, error) {
	start := time.Now()
	c, err := cache.New(l.client, path)
	if err != nil {
		return loaded{}, err
	}
	l.c = c
	select {
	case <-c.Initialized():
	case <-ctx.Done():
		return loaded{}, ctx.Err()
	}
	res := loaded{elapsed: time.Since(start), nodes: c.Stats().Nodes, heap: goHeap()}
	lctx, cancel := context.WithCancel(context.Background())
	events, err := c.Listen(lctx, cache.WithBuffer(1<<16))
	if err != nil {
		cancel()
		return loaded{}, err
	}
	l.cancel, l.done = cancel, make(chan struct{})
	l.changes.Store(0)
	go func() {
		defer close(l.done)
		for ev := range events {
			if ev.Type == cache.Changed {
				at := time.Now().UnixNano()
				l.changes.Add(1)
				l.mu.Lock()
				if ev.Path == l.trackPath {
					l.stamps = append(l.stamps, stamp{ev.Node.Stat.Version, at})
				}
				l.mu.Unlock()
			}
		}
	}()
	return res, nil
}

func (l *localCache) count() (int64, error) { return l.changes.Load(), nil }

func (l *localCache) track(path string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trackPath, l.stamps = path, nil
	return nil
}

func (l *localCache) tracked() ([]stamp, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stamps
	l.trackPath, l.stamps = "", nil
	return out, nil
}

func (l *localCache) verify(timeout time.Duration, want []nodeVersion) (time.Duration, int, error) {
	start := time.Now()
	for {
		behind := 0
		for _, w := range want {
			if n, ok := l.c.Get(w.path); !ok || n.Stat.Version != w.version {
				behind++
			}
		}
		if behind == 0 || time.Since(start) > timeout {
			return time.Since(start), behind, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *localCache) unload() error {
	if l.c != nil {
		l.c.Close()
		if l.cancel != nil {
			l.cancel()
			<-l.done
		}
	}
	if l.client != nil {
		l.client.Close()
	}
	l.c, l.client, l.cancel, l.done = nil, nil, nil, nil
	return nil
}

func (l *localCache) pid() int     { return os.Getpid() }
func (l *localCache) close() error { return l.unload() }

// remoteCache is a peer's cache in its driver (CuratorBench.java's
// CacheDriver, kazoo_bench.py's cache_driver).
type remoteCache struct{ d *driver }

// driverTimeout bounds the wait for a driver's answer: a first view of
// 100,000 nodes in Kazoo takes a minute or two.
const driverTimeout = 10 * time.Minute

func (r *remoteCache) ask(reply string, cmd ...string) (string, error) {
	if err := r.d.send(strings.Join(cmd, " ")); err != nil {
		return "", err
	}
	type answer struct {
		s   string
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		s, err := r.d.next(reply)
		ch <- answer{s, err}
	}()
	select {
	case a := <-ch:
		return a.s, a.err
	case <-time.After(driverTimeout):
		r.d.cmd.Process.Kill()
		<-ch
		return "", fmt.Errorf("%s driver: no %s to %q after %v", r.d.name, reply, cmd[0], driverTimeout)
	}
}

func (r *remoteCache) connect(_ context.Context, servers []string) (int64, error) {
	s, err := r.ask("CONNECTED", "connect", strings.Join(servers, ","))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

func (r *remoteCache) load(_ context.Context, path string) (loaded, error) {
	s, err := r.ask("LOADED", "load", path)
	if err != nil {
		return loaded{}, err
	}
	var ns, nodes, heap int64
	if _, err := fmt.Sscanf(s, "%d %d %d", &ns, &nodes, &heap); err != nil {
		return loaded{}, fmt.Errorf("%s driver said LOADED %q: %w", r.d.name, s, err)
	}
	return loaded{elapsed: time.Duration(ns), nodes: int(nodes), heap: heap}, nil
}

func (r *remoteCache) count() (int64, error) {
	s, err := r.ask("COUNT", "count")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

func (r *remoteCache) track(path string) error {
	_, err := r.ask("TRACKING", "track", path)
	return err
}

func (r *remoteCache) tracked() ([]stamp, error) {
	s, err := r.ask("TRACKED", "tracked")
	if err != nil {
		return nil, err
	}
	return parseStamps(s)
}

// parseStamps reads "version:ns version:ns ...".
func parseStamps(s string) ([]stamp, error) {
	var out []stamp
	for _, f := range strings.Fields(s) {
		v, at, ok := strings.Cut(f, ":")
		version, err1 := strconv.ParseInt(v, 10, 32)
		ns, err2 := strconv.ParseInt(at, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bench: %q is not version:ns", f)
		}
		out = append(out, stamp{int32(version), ns})
	}
	return out, nil
}

func (r *remoteCache) verify(timeout time.Duration, want []nodeVersion) (time.Duration, int, error) {
	cmd := []string{"verify", strconv.FormatInt(timeout.Milliseconds(), 10)}
	for _, w := range want {
		cmd = append(cmd, w.path, strconv.Itoa(int(w.version)))
	}
	s, err := r.ask("VERIFIED", cmd...)
	if err != nil {
		return 0, 0, err
	}
	var ns int64
	var behind int
	if _, err := fmt.Sscanf(s, "%d %d", &ns, &behind); err != nil {
		return 0, 0, fmt.Errorf("%s driver said VERIFIED %q: %w", r.d.name, s, err)
	}
	return time.Duration(ns), behind, nil
}

func (r *remoteCache) unload() error {
	_, err := r.ask("UNLOADED", "unload")
	return err
}

func (r *remoteCache) pid() int { return r.d.cmd.Process.Pid }

func (r *remoteCache) close() error {
	if err := r.d.send("quit"); err != nil {
		r.d.cmd.Process.Kill()
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- r.d.wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		r.d.cmd.Process.Kill()
		return fmt.Errorf("%s cache driver did not quit", r.d.name)
	}
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
