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

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// ElectionQueueConfig says how to measure leader failover against
// Curator's LeaderLatch and the work queue against Kazoo's LockingQueue.
type ElectionQueueConfig struct {
	Servers        []string
	Peers          []string      // "Curator" (failover), "Kazoo" (queue)
	Rounds         int           // results are medians over the rounds
	SessionTimeout time.Duration // of the leader and the standby
	Workers        int           // queue workers, each with its own session
	Items          int           // items per queue round
	QueueOnly      bool          // the queue scenario alone, without failover
	Progress       io.Writer
}

// ElectionQueueResults are medians over the rounds.
type ElectionQueueResults struct {
	Cfg        ElectionQueueConfig
	Failover   map[string]time.Duration // leader cut off → the standby leads
	Negotiated map[string]time.Duration // the session timeout the server granted
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
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
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
	seq := 0
	next := func() string { seq++; return fmt.Sprintf("%s/%d", root, seq) }
	fo, qr, qp := map[string][]time.Duration{}, map[string][]float64{}, map[string][]float64{}
	res := &ElectionQueueResults{Cfg: cfg, Failover: map[string]time.Duration{}, Negotiated: map[string]time.Duration{}, QueueRate: map[string]float64{}, QueueRequests: map[string]float64{}}
	for round := 0; round <= cfg.Rounds; round++ {
		record := func(impl string, d time.Duration, negotiated time.Duration, err error) error {
			if err != nil {
				return fmt.Errorf("failover, %s: %w", impl, err)
			}
			res.Negotiated[impl] = negotiated
			if round > 0 {
				fo[impl] = append(fo[impl], d)
				fmt.Fprintf(progress, "round %d/%d  %-10s failover %v (session timeout %v)\n", round, cfg.Rounds, impl, d.Round(time.Millisecond), negotiated)
			}
			return nil
		}
		if !cfg.QueueOnly {
			d, neg, err := runFailover(ctx, cfg.Servers, next(), cfg.SessionTimeout)
			if err := record("zkrecipes", d, neg, err); err != nil {
				return nil, err
			}
		}
		if curator && !cfg.QueueOnly {
			d, neg, err := curatorFailover(ctx, cfg.Servers, next(), cfg.SessionTimeout)
			if err := record("Curator", d, neg, err); err != nil {
				return nil, err
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
	fmt.Fprintf(&b, "Medians of %d rounds.\n\n| scenario | zkrecipes | peer | peer ÷ zkrecipes |\n|---|---:|---:|---:|\n", r.Cfg.Rounds)
	if _, ok := r.Failover["zkrecipes"]; !ok {
		// QueueOnly: no failover row
	} else if d, ok := r.Failover["Curator"]; ok {
		fmt.Fprintf(&b, "| failover: leader cut off → standby leads (session timeout %v; Curator LeaderLatch) | %v | %v | %.3f |\n",
			r.Negotiated["zkrecipes"], r.Failover["zkrecipes"].Round(time.Millisecond), d.Round(time.Millisecond), float64(d)/float64(r.Failover["zkrecipes"]))
	} else {
		fmt.Fprintf(&b, "| failover: leader cut off → standby leads (session timeout %v) | %v | | |\n", r.Negotiated["zkrecipes"], r.Failover["zkrecipes"].Round(time.Millisecond))
	}
	if k, ok := r.QueueRate["Kazoo"]; ok {
		fmt.Fprintf(&b, "| queue, %d workers, %d items: items/s (Kazoo LockingQueue) | %.0f | %.0f | %.2f |\n",
			r.Cfg.Workers, r.Cfg.Items, r.QueueRate["zkrecipes"], k, r.QueueRate["zkrecipes"]/k)
	} else {
		fmt.Fprintf(&b, "| queue, %d workers, %d items: items/s | %.0f | | |\n", r.Cfg.Workers, r.Cfg.Items, r.QueueRate["zkrecipes"])
	}
	return b.String()
}

// runFailover: a leader whose connection goes through a proxy, a standby
// waiting on another server; the proxy goes silent (the leader's session
// expires on the server), and the time until the standby's Campaign
// returns is the failover.
func runFailover(ctx context.Context, servers []string, path string, timeout time.Duration) (time.Duration, time.Duration, error) {
	proxy, err := zkserver.NewProxy(servers[:1])
	if err != nil {
		return 0, 0, err
	}
	defer proxy.Close()
	open := func(s []string) (*connection.Client, error) {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return connection.Open(octx, s, connection.WithSessionTimeout(timeout))
	}
	lc, err := open(proxy.Servers())
	if err != nil {
		return 0, 0, err
	}
	defer lc.Close()
	sc, err := open(pin(servers, 1))
	if err != nil {
		return 0, 0, err
	}
	defer sc.Close()
	leader, err := election.New(lc, path, "leader")
	if err != nil {
		return 0, 0, err
	}
	if _, err := leader.Campaign(ctx); err != nil {
		return 0, 0, err
	}
	standby, err := election.New(sc, path, "standby")
	if err != nil {
		return 0, 0, err
	}
	type won struct {
		t   *election.Term
		at  time.Time
		err error
	}
	elected := make(chan won, 1)
	go func() {
		t, err := standby.Campaign(ctx)
		elected <- won{t, time.Now(), err}
	}()
	for {
		ps, err := standby.Participants(ctx)
		if err != nil {
			return 0, 0, err
		}
		if len(ps) == 2 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	cut := time.Now()
	proxy.Blackhole()
	w := <-elected
	if w.err != nil {
		return 0, 0, w.err
	}
	if err := w.t.Resign(ctx); err != nil {
		return 0, 0, err
	}
	return w.at.Sub(cut), sc.Session().Timeout(), nil
}

// curatorFailover is runFailover with Curator's LeaderLatch in the driver.
func curatorFailover(ctx context.Context, servers []string, path string, timeout time.Duration) (time.Duration, time.Duration, error) {
	proxy, err := zkserver.NewProxy(servers[:1])
	if err != nil {
		return 0, 0, err
	}
	defer proxy.Close()
	d, err := curatorPeer.start(ctx, servers[1%len(servers):], path, "failover", strings.Join(proxy.Servers(), ","), strconv.Itoa(int(timeout.Milliseconds())))
	if err != nil {
		return 0, 0, err
	}
	defer d.cmd.Process.Kill()
	neg, err := d.next("READY")
	if err != nil {
		return 0, 0, err
	}
	ms, err := strconv.Atoi(neg)
	if err != nil {
		return 0, 0, fmt.Errorf("the Curator driver said READY %q", neg)
	}
	cut := time.Now()
	proxy.Blackhole()
	if _, err := d.next("ELECTED"); err != nil {
		return 0, 0, err
	}
	elapsed := time.Since(cut)
	return elapsed, time.Duration(ms) * time.Millisecond, d.wait()
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
