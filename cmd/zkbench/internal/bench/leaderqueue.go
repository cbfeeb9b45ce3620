package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// ElectionQueueConfig says how to measure leader failover against
// Curator's LeaderLatch and the work queue against Kazoo's LockingQueue.
type ElectionQueueConfig struct {
	Servers        []string
	Peers          []string      // "Curator" (failover), "Kazoo" (queue)
	Rounds         int           // results are medians over the rounds
	SessionTimeout time.Duration // of the leader and the standby
	Failovers      int           // failovers per implementation and counted round (0: 5; the warm-up has one)
	Workers        int           // queue workers, each with its own session
	Items          int           // items per queue round
	QueueOnly      bool          // the queue scenario alone, without failover
	Progress       io.Writer
}

// ElectionQueueResults are medians over the rounds.
type ElectionQueueResults struct {
	Cfg        ElectionQueueConfig
	Failover   map[string]time.Duration // leader cut off → the standby leads
	Gone       map[string]time.Duration // the cut → the leader's node gone on the standby's server
	Reaction   map[string]time.Duration // the leader's node gone on the standby's server → the standby leads
	Negotiated map[string]time.Duration // the session timeout the server granted
	Tick       time.Duration            // the servers' tickTime, over which the failovers' starts are spread (failoverStarts)
	QueueRate  map[string]float64       // items taken and done per second
	// QueueRequests is the packets the servers received per item
	// (mntr's zk_packets_received, pings included): zkrecipes while its
	// workers take and consume, Kazoo over its driver's whole run (its
	// connects and its one transaction of puts too).
	QueueRequests map[string]float64
}

// RunElectionQueue runs the election and queue scenarios, interleaving
// the implementations; round 0 warms up and is not counted.
func RunElectionQueue(ctx context.Context, cfg ElectionQueueConfig) (*ElectionQueueResults, error) {
	if cfg.Rounds < 1 || cfg.SessionTimeout <= 0 || cfg.Workers < 1 || cfg.Items < 1 {
		return nil, errors.New("bench: election and queue scenarios need positive rounds, session timeout, workers and items")
	}
	progress := orDiscard(cfg.Progress)
	var curator, kazoo bool
	for _, p := range cfg.Peers {
		switch p {
		case "Curator":
			curator = true
		case "Kazoo":
			kazoo = true
		default:
			return nil, fmt.Errorf("bench: no peer %q", p)
		}
	}
	root := fmt.Sprintf("/zkrecipes-bench-election-queue/%d", time.Now().UnixNano())
	next := pathSeq(root)
	if cfg.Failovers == 0 {
		cfg.Failovers = 5
	}
	fo, gone, re, qr, qp := map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]float64{}, map[string][]float64{}
	res := &ElectionQueueResults{Cfg: cfg, Failover: map[string]time.Duration{}, Gone: map[string]time.Duration{}, Reaction: map[string]time.Duration{}, Negotiated: map[string]time.Duration{}, QueueRate: map[string]float64{}, QueueRequests: map[string]float64{}}
	res.Tick = serverTick(cfg.Servers, cfg.SessionTimeout)
	for round := 0; round <= cfg.Rounds; round++ {
		var starts map[string][]time.Duration // this round's, each implementation's
		record := func(impl string, run func(context.Context, []string, string, time.Duration) (failover, error)) error {
			// A delay before each failover, spread over the tick: see
			// failoverStarts.
			if err := sleepCtx(ctx, starts[impl][0]); err != nil {
				return err
			}
			starts[impl] = starts[impl][1:]
			f, err := run(ctx, cfg.Servers, next(), cfg.SessionTimeout)
			for again := 0; errors.Is(err, errRunAgain) && again < 3; again++ {
				fmt.Fprintf(progress, "round %d/%d  %-10s failover run again: %v\n", round, cfg.Rounds, impl, err)
				f, err = run(ctx, cfg.Servers, next(), cfg.SessionTimeout)
			}
			if err != nil {
				return fmt.Errorf("failover, %s: %w", impl, err)
			}
			res.Negotiated[impl] = f.negotiated
			if round > 0 {
				fo[impl] = append(fo[impl], f.elected)
				gone[impl] = append(gone[impl], f.gone)
				re[impl] = append(re[impl], f.reaction)
				fmt.Fprintf(progress, "round %d/%d  %-10s failover %v (session timeout %v; its node gone %v after the cut, the standby leads %v after that)\n",
					round, cfg.Rounds, impl, f.elected.Round(time.Millisecond), f.negotiated, f.gone.Round(time.Millisecond), f.reaction.Round(10*time.Microsecond))
			}
			return nil
		}
		failovers := cfg.Failovers
		if round == 0 {
			failovers = 1
		}
		if cfg.QueueOnly {
			failovers = 0
		}
		starts = map[string][]time.Duration{"zkrecipes": failoverStarts(failovers, res.Tick), "Curator": failoverStarts(failovers, res.Tick)}
		for range failovers {
			if err := record("zkrecipes", runFailover); err != nil {
				return nil, err
			}
			if curator {
				if err := record("Curator", curatorFailover); err != nil {
					return nil, err
				}
			}
		}
		rate, packets, err := runQueue(ctx, cfg.Servers, next(), cfg.Workers, cfg.Items)
		if err != nil {
			return nil, fmt.Errorf("queue, zkrecipes: %w", err)
		}
		if round > 0 {
			qr["zkrecipes"] = append(qr["zkrecipes"], rate)
			qp["zkrecipes"] = append(qp["zkrecipes"], float64(packets)/float64(cfg.Items))
			fmt.Fprintf(progress, "round %d/%d  %-10s queue %.0f items/s, %.2f requests/item\n", round, cfg.Rounds, "zkrecipes", rate, float64(packets)/float64(cfg.Items))
		}
		if kazoo {
			before, _ := packetsReceived(cfg.Servers)
			a, b, err := kazooPeer.result(ctx, cfg.Servers, next(), "queue", cfg.Workers, cfg.Items)
			if err != nil {
				return nil, fmt.Errorf("queue, Kazoo: %w", err)
			}
			after, _ := packetsReceived(cfg.Servers)
			rate := float64(a) / time.Duration(b).Seconds()
			if round > 0 {
				qr["Kazoo"] = append(qr["Kazoo"], rate)
				qp["Kazoo"] = append(qp["Kazoo"], float64(after-before)/float64(cfg.Items))
				fmt.Fprintf(progress, "round %d/%d  %-10s queue %.0f items/s, %.2f requests/item\n", round, cfg.Rounds, "Kazoo", rate, float64(after-before)/float64(cfg.Items))
			}
		}
		if round == 0 {
			fmt.Fprintln(progress, "warm-up     done")
		}
	}
	for impl, ds := range fo {
		res.Failover[impl] = median(ds)
		res.Gone[impl] = median(gone[impl])
		res.Reaction[impl] = median(re[impl])
	}
	for impl, rs := range qr {
		res.QueueRate[impl] = median(rs)
	}
	for impl, ps := range qp {
		res.QueueRequests[impl] = median(ps)
	}
	return res, nil
}

// Markdown renders the results with ratios of each peer to zkrecipes.
func (r *ElectionQueueResults) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d rounds (failover: of %d failovers, %d per round).\n\n| scenario | zkrecipes | peer | peer ÷ zkrecipes |\n|---|---:|---:|---:|\n", r.Cfg.Rounds, r.Cfg.Rounds*r.Cfg.Failovers, r.Cfg.Failovers)
	quiet := failoverQuiet(r.Negotiated["zkrecipes"])
	if _, ok := r.Failover["zkrecipes"]; !ok {
		// QueueOnly: no failover row
	} else if d, ok := r.Failover["Curator"]; ok {
		fmt.Fprintf(&b, "| failover: leader cut off %v after it was last heard → standby leads (session timeout %v; Curator LeaderLatch) | %v | %v | %.3f |\n",
			quiet.Round(time.Millisecond), r.Negotiated["zkrecipes"], r.Failover["zkrecipes"].Round(time.Millisecond), d.Round(time.Millisecond), float64(d)/float64(r.Failover["zkrecipes"]))
		fmt.Fprintf(&b, "| of which: the cut → the leader's node gone on the standby's server (the server's expiry) | %v | %v | %.3f |\n",
			r.Gone["zkrecipes"].Round(time.Millisecond), r.Gone["Curator"].Round(time.Millisecond), float64(r.Gone["Curator"])/float64(r.Gone["zkrecipes"]))
		// No ratio: the zkrecipes standby's reaction is within the
		// observer's own spread of it (tens of microseconds either way).
		fmt.Fprintf(&b, "| of which: the leader's node gone on the standby's server → standby leads (the library's reaction) | %v | %v | |\n",
			r.Reaction["zkrecipes"].Round(10*time.Microsecond), r.Reaction["Curator"].Round(10*time.Microsecond))
	} else {
		fmt.Fprintf(&b, "| failover: leader cut off %v after it was last heard → standby leads (session timeout %v) | %v | | |\n",
			quiet.Round(time.Millisecond), r.Negotiated["zkrecipes"], r.Failover["zkrecipes"].Round(time.Millisecond))
		fmt.Fprintf(&b, "| of which: the cut → the leader's node gone on the standby's server (the server's expiry) | %v | | |\n", r.Gone["zkrecipes"].Round(time.Millisecond))
		fmt.Fprintf(&b, "| of which: the leader's node gone on the standby's server → standby leads (the library's reaction) | %v | | |\n", r.Reaction["zkrecipes"].Round(10*time.Microsecond))
	}
	if k, ok := r.QueueRate["Kazoo"]; ok {
		fmt.Fprintf(&b, "| queue, %d workers, %d items: items/s (Kazoo LockingQueue; the last column here is zkrecipes ÷ Kazoo) | %.0f | %.0f | %.2f |\n",
			r.Cfg.Workers, r.Cfg.Items, r.QueueRate["zkrecipes"], k, r.QueueRate["zkrecipes"]/k)
	} else {
		fmt.Fprintf(&b, "| queue, %d workers, %d items: items/s | %.0f | | |\n", r.Cfg.Workers, r.Cfg.Items, r.QueueRate["zkrecipes"])
	}
	return b.String()
}

// runQueue puts items, then has workers (each with its own session) take
// and finish them; it returns items per second, and the packets the
// servers received meanwhile (0 if mntr did not answer).
func runQueue(ctx context.Context, servers []string, path string, workers, items int) (float64, int64, error) {
	pc, err := openClient(ctx, servers[:1])
	if err != nil {
		return 0, 0, err
	}
	defer pc.Close()
	pq, err := queue.New(pc, path)
	if err != nil {
		return 0, 0, err
	}
	for i := range items {
		if err := pq.Put(ctx, []byte(strconv.Itoa(i))); err != nil {
			return 0, 0, err
		}
	}
	qs := make([]*queue.Queue, workers)
	for i := range workers {
		c, err := openClient(ctx, pin(servers, i))
		if err != nil {
			return 0, 0, err
		}
		defer c.Close()
		if qs[i], err = queue.New(c, path); err != nil {
			return 0, 0, err
		}
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	before, _ := packetsReceived(servers)
	start := time.Now()
	var elapsed time.Duration
	var finish sync.Once
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, err := q.Take(wctx)
				if err == nil {
					err = it.Consume(ctx)
				}
				if wctx.Err() != nil {
					return
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					stop()
					return
				}
				if done.Add(1) == int64(items) {
					finish.Do(func() { elapsed = time.Since(start) })
					stop()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	after, err := packetsReceived(servers)
	if err != nil || before == 0 {
		after, before = 0, 0
	}
	return float64(items) / elapsed.Seconds(), after - before, nil
}
