package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/cmd/zkbench/internal/bench"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// runBench parses the command line and runs the scenarios it asks for.
func runBench(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags(out)
	servers := fs.String("servers", "", "ZooKeeper servers, host:port,... (default: ZK_SERVERS, else a local 3-node ensemble started for the run)")
	rounds := fs.Int("rounds", 3, "rounds; results are medians")
	duration := fs.Duration("duration", 3*time.Second, "length of each contended window")
	iterations := fs.Int("iterations", 300, "uncontended Lock+Unlock per round")
	parts := fs.String("participants", "2,10,100", "participant counts of the contended runs")
	impls := fs.String("impls", "mutex,naive,zk.Lock,Curator,Kazoo,raw floor", "implementations to compare (Curator and Kazoo need Debian's libcurator-recipes-java, a JDK and python3-kazoo)")
	output := fs.String("o", "", "also write the markdown report to this file")
	docs := fs.String("docs", "", "also write benchmarks.md and benchmarks.svg (the chart) into this directory")
	scenarios := fs.String("scenarios", "locks,recipes,election-queue,counters,barriers,scale,cache,discovery,observer,curatorqueue", "what to measure: locks (the mutex against its peers), recipes (the read/write lock and the semaphore against Curator's and Kazoo's), election-queue (leader failover against Curator's LeaderLatch, the work queue against Kazoo's LockingQueue), counters (the counter against Curator's DistributedAtomicLong and Kazoo's Counter), barriers (the double barrier's round against Curator's DistributedDoubleBarrier), scale (many keys locked through one client, against Curator and zk.Lock), cache (the cache against Curator's CuratorCache and TreeCache and Kazoo's TreeCache), discovery (a registration reaching watchers' caches, re-registration after an expiry, against Curator's ServiceDiscovery), observer (the uncontended Lock+Unlock without an observer and with one that records every event, interleaved), curatorqueue (Curator's DistributedQueue and SimpleDistributedQueue, the curatorqueue package against Curator's own)")
	counterParts := fs.String("counter-participants", "1,10,100", "counters: participant counts, each incrementing one counter")
	barrierMembers := fs.Int("barrier-members", 10, "barriers: members of the double barrier, each with its own session")
	barrierCycles := fs.Int("barrier-cycles", 100, "barriers: barrier rounds (enter, leave) per measurement")
	keys := fs.Int("keys", 10000, "scale: distinct lock paths")
	keyGoroutines := fs.Int("key-goroutines", 64, "scale: goroutines (Curator: threads) locking keys through one client")
	deepWaiters := fs.String("deep", "10,1000", "scale: waiters of the deep-queue runs on one lock")
	deepSessions := fs.Int("deep-sessions", 50, "scale: sessions the deep queue's waiters are spread over (at most one per waiter)")
	idleWaiters := fs.String("idle", "100x100", "scale: idle waiters on one client, LOCKSxWAITERS (waiters per lock); 0 for none")
	failoverTimeout := fs.Duration("failover-session-timeout", 2*time.Second, "election-queue: the session timeout of the leader and the standby")
	queueWorkers := fs.Int("queue-workers", 10, "election-queue: workers taking items")
	queueItems := fs.Int("queue-items", 500, "election-queue: items per round")
	queueOnly := fs.Bool("queue-only", false, "election-queue: measure the work queue alone, without the failover")
	readers := fs.Int("readers", 50, "recipes: readers started together on a free read lock")
	semClients := fs.Int("sem-clients", 10, "recipes: clients taking and returning semaphore leases")
	semLeases := fs.Int("sem-leases", 3, "recipes: the semaphore's leases")
	cacheSizes := fs.String("cache-sizes", "10000,100000", "cache: the trees' sizes in nodes")
	cacheBigRounds := fs.Int("cache-big-rounds", 2, "cache: rounds of the first view of trees of 100,000 nodes or more (the others: --rounds)")
	cacheLagSamples := fs.Int("cache-lag-samples", 200, "cache: sets of one node for the lag")
	cacheLagInterval := fs.Duration("cache-lag-interval", 12*time.Millisecond, "cache: time between those sets")
	cacheWriters := fs.Int("cache-writers", 32, "cache: goroutines setting nodes at full speed")
	cacheWriteNodes := fs.Int("cache-write-nodes", 1000, "cache: nodes set at full speed")
	cacheChanges := fs.Int("cache-changes", 10, "cache: nodes set while a cache is cut off")
	watchers := fs.Int("watchers", 10, "discovery: caches of the service, each with its own session")
	registrations := fs.Int("registrations", 50, "discovery: registrations per round")
	expiries := fs.Int("expiries", 5, "discovery: expiries of the registrar's session per round")
	linkDelay := fs.String("link-delay", "", "locks: also run the latency-bound scenarios (uncontended, handoff, 2 participants) on a second local ensemble whose every link — client to server, server to server (quorum and election ports) — goes through a proxy that adds this one-way delay, one run per delay in the list, e.g. 0,250us; with the requests and round trips per operation counted on the wire")
	observerCycles := fs.Int("observer-cycles", 2000, "observer: Lock+Unlock cycles of each variant per round, in blocks of 50")
	cqConsumers := fs.Int("curatorqueue-consumers", 10, "curatorqueue: DistributedQueue consumers, each with its own session")
	cqItems := fs.Int("curatorqueue-items", 500, "curatorqueue: items per run")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the Go implementations' client side) to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	doLocks, doRecipes, doElectionQueue, doCounters, doBarriers, doScale, doCache, doDiscovery, doObserver, doCuratorQueue := false, false, false, false, false, false, false, false, false, false
	for _, s := range strings.Split(*scenarios, ",") {
		switch strings.TrimSpace(s) {
		case "locks":
			doLocks = true
		case "recipes":
			doRecipes = true
		case "election-queue":
			doElectionQueue = true
		case "counters":
			doCounters = true
		case "barriers":
			doBarriers = true
		case "scale":
			doScale = true
		case "cache":
			doCache = true
		case "discovery":
			doDiscovery = true
		case "observer":
			doObserver = true
		case "curatorqueue":
			doCuratorQueue = true
		default:
			return fmt.Errorf("--scenarios: %q is not locks, recipes, election-queue, counters, barriers, scale, cache, discovery, observer or curatorqueue", s)
		}
	}
	others := doLocks || doRecipes || doElectionQueue || doCounters || doBarriers || doScale || doDiscovery
	whole := doLocks && doRecipes && doElectionQueue && doCounters && doBarriers && doScale && doCache && doDiscovery && doObserver && doCuratorQueue
	cacheOnly := doCache && !others && !doObserver && !doCuratorQueue
	observerOnly := doObserver && !others && !doCache && !doCuratorQueue
	curatorQueueOnly := doCuratorQueue && !others && !doCache && !doObserver
	if *docs != "" && !whole && !cacheOnly && !observerOnly && !curatorQueueOnly {
		return fmt.Errorf("--docs writes the whole page (--scenarios locks,recipes,election-queue,counters,barriers,scale,cache,discovery,observer,curatorqueue), its cache section alone (--scenarios cache), its observer section alone (--scenarios observer) or its Curator queues' section alone (--scenarios curatorqueue)")
	}
	if doCuratorQueue && (*cqConsumers < 1 || *cqItems < 1) {
		return usagef("--curatorqueue-consumers and --curatorqueue-items must be positive, not %d and %d", *cqConsumers, *cqItems)
	}
	sizes, err := positiveCounts("--cache-sizes", *cacheSizes)
	if err != nil {
		return err
	}
	counts, err := positiveCounts("--participants", *parts)
	if err != nil {
		return err
	}
	idleLocks, idlePer, err := parseIdle(*idleWaiters)
	if err != nil {
		return err
	}
	deep, err := positiveCounts("--deep", *deepWaiters)
	if err != nil {
		return err
	}
	counterCounts, err := positiveCounts("--counter-participants", *counterParts)
	if err != nil {
		return err
	}
	delays, err := parseDelays(*linkDelay)
	if err != nil {
		return err
	}
	given, err := serverList(*servers)
	if err != nil {
		return err
	}
	if len(delays) > 0 && len(given) > 0 {
		return usagef("--link-delay needs the local ensemble (no --servers, no ZK_SERVERS): its proxies sit between the servers")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	chosen, err := bench.ByName(strings.Split(*impls, ",")...)
	if err != nil {
		return err
	}
	defer bench.CleanupPeers()
	var peers []string // the peers of the recipe scenarios
	for _, i := range chosen {
		if i.Name == "Curator" || i.Name == "Kazoo" {
			peers = append(peers, i.Name)
		}
	}
	ensemble := "the ensemble at " + strings.Join(given, ",")
	if len(given) == 0 {
		ensemble = "a local 3-node ZooKeeper ensemble (zktest: tickTime 100 ms, forceSync=no, containers checked every minute)"
	}
	// ZooKeeper's own container check interval (a minute), not the tests'
	// second: the many-keys run's directories are recreated as often as a
	// service's would be.
	list, stop, err := serversOrLocal(given, 3, out, zkserver.WithContainerCheckInterval(time.Minute))
	if err != nil {
		return err
	}
	defer stop()
	start := time.Now()
	report := fmt.Sprintf("Measured %s on %s: %s, %d CPUs, %s. Each participant has its own session.\n",
		time.Now().UTC().Format("2006-01-02"), ensemble, runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	var res *bench.Results
	if doLocks {
		if res, err = bench.Run(ctx, bench.Config{
			Servers: list, Impls: chosen, Participants: counts, Duration: *duration,
			Iterations: *iterations, Rounds: *rounds, Progress: out,
		}); err != nil {
			return err
		}
		report += "\n" + res.Markdown("mutex")
		if len(delays) > 0 {
			section, err := runLatency(ctx, out, chosen, delays, *rounds, *iterations, *duration)
			if err != nil {
				return err
			}
			report += "\n" + section
		}
	}
	if doRecipes {
		rr, err := bench.RunRecipes(ctx, bench.RecipeConfig{
			Servers: list, Peers: peers, Rounds: *rounds, Readers: *readers, Iterations: max(20, *iterations/3),
			SemClients: *semClients, SemLeases: *semLeases, Duration: *duration, Progress: out,
		})
		if err != nil {
			return err
		}
		report += "\n### The read/write lock and the semaphore\n\n" + rr.Markdown()
	}
	if doElectionQueue {
		er, err := bench.RunElectionQueue(ctx, bench.ElectionQueueConfig{
			Servers: list, Peers: peers, Rounds: *rounds, SessionTimeout: *failoverTimeout,
			Workers: *queueWorkers, Items: *queueItems, QueueOnly: *queueOnly, Progress: out,
		})
		if err != nil {
			return err
		}
		report += "\n### Leader election and the work queue\n\n" + er.Markdown()
	}
	if doCounters {
		cr, err := bench.RunCounters(ctx, bench.CounterConfig{
			Servers: list, Peers: peers, Rounds: *rounds, Participants: counterCounts, Duration: *duration, Progress: out,
		})
		if err != nil {
			return err
		}
		report += "\n### Counters\n\n" + cr.Markdown()
	}
	if doBarriers {
		br, err := bench.RunBarriers(ctx, bench.BarrierConfig{
			Servers: list, Peers: peers, Rounds: *rounds, Members: *barrierMembers, Cycles: *barrierCycles, Progress: out,
		})
		if err != nil {
			return err
		}
		report += "\n### The double barrier\n\n" + br.Markdown()
	}
	var sr *bench.ScaleResults
	if doScale {
		var keyed []string
		for _, i := range chosen {
			if i.Name == "mutex" || i.Name == "zk.Lock" || i.Name == "Curator" || i.Name == "Kazoo" {
				keyed = append(keyed, i.Name)
			}
		}
		sr, err = bench.RunScale(ctx, bench.ScaleConfig{
			Servers: list, Impls: keyed, Rounds: *rounds, Goroutines: *keyGoroutines, Keys: *keys,
			Deep: deep, DeepSessions: *deepSessions, IdleLocks: idleLocks, IdlePerLock: idlePer, Duration: *duration, Progress: out,
		})
		if err != nil {
			return err
		}
		report += "\n### Many keys, deep queues and idle waiters\n\n" + sr.Markdown()
	}
	if doDiscovery {
		curator := slices.Contains(peers, "Curator")
		dr, err := bench.RunDiscovery(ctx, bench.DiscoveryConfig{
			Servers: list, Curator: curator, Rounds: *rounds, Watchers: *watchers, Registrations: *registrations,
			Expiries: *expiries, SessionTimeout: *failoverTimeout, Progress: out,
		})
		if err != nil {
			return err
		}
		report += "\n### Service discovery\n\n" + dr.Markdown()
	}
	var cacheSection string
	if doCache {
		load0 := loadAverage()
		cr, err := bench.RunCache(ctx, bench.CacheConfig{
			Servers: list, Peers: peers, Sizes: sizes, Rounds: *rounds, BigRounds: *cacheBigRounds, BigSize: 100000, ServerHeap: true,
			LagSamples: *cacheLagSamples, LagInterval: *cacheLagInterval, Writers: *cacheWriters, WriteNodes: *cacheWriteNodes,
			Duration: *duration, Changes: *cacheChanges, Cleanup: len(given) > 0, Progress: out,
		})
		if err != nil {
			return err
		}
		cacheSection = "### The cache\n\n" + bench.CacheMethod(cr.Cfg, cr.Nodes) + "\n" +
			fmt.Sprintf("Measured %s on %s: %s, %d CPUs, %s; load average %s at the start of these scenarios, %s at their end (other processes share the machine).\n\n",
				time.Now().UTC().Format("2006-01-02"), ensemble, runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.Version(), load0, loadAverage()) +
			cr.Markdown()
	}
	var observerSection string
	if doObserver {
		load0 := loadAverage()
		ores, err := bench.RunObserverOverhead(ctx, bench.ObserverConfig{
			Servers: list, Rounds: *rounds, Cycles: *observerCycles, Block: 50, Progress: out,
		})
		if err != nil {
			return err
		}
		observerSection = "### What an observer costs\n\n" +
			fmt.Sprintf("The uncontended Lock+Unlock of two clients on the first server, one without an observer (`connection.WithObserver` not given) and one with an observer that counts every event and sums every end's duration into atomics, %d cycles each per round in blocks of 50 that alternate between them, in alternating order, so that the machine's load falls on both alike; per cycle, the elapsed time, the process's CPU time (user and system, `getrusage`) and the process's heap allocations (`runtime.MemStats.Mallocs`, the client's own goroutines included). Measured %s on %s: %s, %d CPUs, %s; load average %s at the start, %s at the end.\n\n",
				*observerCycles, time.Now().UTC().Format("2006-01-02"), ensemble, runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.Version(), load0, loadAverage()) +
			ores.Markdown()
	}
	var curatorQueueSection string
	if doCuratorQueue {
		load0 := loadAverage()
		qr, err := bench.RunCuratorQueue(ctx, bench.CuratorQueueConfig{
			Servers: list, Curator: slices.Contains(peers, "Curator"), Rounds: *rounds,
			Consumers: *cqConsumers, Items: *cqItems, Progress: out,
		})
		if err != nil {
			return err
		}
		curatorQueueSection = "### Curator's queues\n\n" + bench.CuratorQueueMethod(qr.Cfg) + "\n" +
			fmt.Sprintf("Measured %s on %s: %s, %d CPUs, %s; load average %s at the start, %s at the end.\n\n",
				time.Now().UTC().Format("2006-01-02"), ensemble, runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.Version(), load0, loadAverage()) +
			qr.Markdown()
	}
	all := report
	if doCache {
		all += "\n" + cacheSection
	}
	if doObserver {
		all += "\n" + observerSection
	}
	if doCuratorQueue {
		all += "\n" + curatorQueueSection
	}
	fmt.Fprintf(out, "\n%s\n(%v in all)\n", all, time.Since(start).Round(time.Second))
	if *output != "" {
		if err := os.WriteFile(*output, []byte(all), 0o644); err != nil {
			return err
		}
	}
	if *docs != "" && cacheOnly {
		name := filepath.Join(*docs, "benchmarks.md")
		page, err := os.ReadFile(name)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		spliced := bench.SpliceSection(string(page), bench.CacheBegin, bench.CacheEnd, cacheSection, "## Reading the results")
		if err := os.WriteFile(name, []byte(spliced), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote the cache section of %s\n", name)
		return nil
	}
	if *docs != "" && curatorQueueOnly {
		name := filepath.Join(*docs, "benchmarks.md")
		page, err := os.ReadFile(name)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		spliced := bench.SpliceSection(string(page), bench.CuratorQueueBegin, bench.CuratorQueueEnd, curatorQueueSection, "## Reading the results")
		if err := os.WriteFile(name, []byte(spliced), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote the Curator queues' section of %s\n", name)
		return nil
	}
	if *docs != "" && observerOnly {
		name := filepath.Join(*docs, "benchmarks.md")
		page, err := os.ReadFile(name)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		spliced := bench.SpliceSection(string(page), bench.ObserverBegin, bench.ObserverEnd, observerSection, "## Reading the results")
		if err := os.WriteFile(name, []byte(spliced), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote the observer section of %s\n", name)
		return nil
	}
	if *docs != "" {
		page := benchmarksPage(report, cacheSection, observerSection, curatorQueueSection, list, *rounds, *duration, *iterations)
		if err := os.WriteFile(filepath.Join(*docs, "benchmarks.md"), []byte(page), 0o644); err != nil {
			return err
		}
		// res and sr are set: --docs needs every scenario.
		if err := os.WriteFile(filepath.Join(*docs, "benchmarks.svg"), res.SVG(), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*docs, "benchmarks-scale.svg"), sr.ScaleSVG(res), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote benchmarks.md, benchmarks.svg and benchmarks-scale.svg in %s\n", *docs)
	}
	return nil
}

// parseDelays reads --link-delay: durations separated by commas ("0" is
// no delay).
func parseDelays(v string) ([]time.Duration, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []time.Duration
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		d, err := time.ParseDuration(s)
		if s == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 || d > time.Second || slices.Contains(out, d) {
			return nil, usagef("--link-delay: %q is not a one-way delay from 0 to 1s (distinct, such as 0,250us)", s)
		}
		out = append(out, d)
	}
	return out, nil
}

// runLatency starts a 3-node ensemble whose links between servers go
// through proxies, and a counting proxy for the clients, and runs the
// latency-bound lock scenarios through them at every delay.
func runLatency(ctx context.Context, out io.Writer, impls []bench.Impl, delays []time.Duration, rounds, iterations int, window time.Duration) (string, error) {
	fmt.Fprintln(out, "Starting a local 3-server ZooKeeper ensemble with proxies between servers, for the delayed links...")
	ens, err := zkserver.New(zkserver.WithServers(3), zkserver.WithServerPartitions(), zkserver.WithContainerCheckInterval(time.Minute))
	if err != nil {
		return "", err
	}
	defer ens.Close()
	proxy, err := zkserver.NewCountingProxy(ens.Servers())
	if err != nil {
		return "", err
	}
	defer proxy.Close()
	leader, err := ens.Leader()
	if err != nil {
		leader = -1
	}
	lr, err := bench.RunLatency(ctx, bench.LatencyConfig{
		Links: ens.DelayServerLinks, Proxy: proxy, Delays: delays, Impls: impls,
		Iterations: iterations, Duration: window, Rounds: rounds, LeaderServer: leader, Progress: out,
	})
	if err != nil {
		return "", err
	}
	return latencyTitle + "\n\n" + lr.Markdown("mutex", "zk.Lock"), nil
}

// latencyTitle heads the section of the delayed links.
const latencyTitle = "### At datacenter latency"

// loadAverage is the machine's one-minute load average, "?" where
// /proc/loadavg cannot say.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// positiveCounts reads a flag's comma-separated positive counts.
func positiveCounts(flag, v string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive count", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseIdle reads --idle: "LOCKSxWAITERS", or "0".
func parseIdle(v string) (locks, perLock int, err error) {
	if v == "0" {
		return 0, 0, nil
	}
	l, w, ok := strings.Cut(v, "x")
	locks, err1 := strconv.Atoi(l)
	perLock, err2 := strconv.Atoi(w)
	if !ok || err1 != nil || err2 != nil || locks < 1 || perLock < 1 {
		return 0, 0, fmt.Errorf("--idle: %q is not LOCKSxWAITERS, such as 100x100, or 0", v)
	}
	return locks, perLock, nil
}
