package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
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

// failover is one failover: from the cut, the standby leads after
// elected; the leader's node was heard gone on the standby's server after
// gone, and the standby led reaction after that.
type failover struct {
	elected, gone, reaction time.Duration
	negotiated              time.Duration
}

// failoverQuiet is how long after the leader's client was last heard the
// proxy goes silent: a sixth of the session timeout, the mean silence of
// an idle client at a moment taken at random (go-zookeeper pings every
// third of the timeout, and so does ZooKeeper's Java client when it has
// sent nothing for that long). The cut is placed by the bytes the proxy
// passed, not by the return of a call or a line of a driver, so that it
// comes at the same point of the leader's silence for every library,
// whatever the time each took to put its standby in line.
// Cutting at once, as the scenario did, cut each leader a few
// milliseconds after its campaign's last request — the worst case, and a
// different one for each library: the sooner the standby was in line, the
// later the session expired.
func failoverQuiet(timeout time.Duration) time.Duration { return timeout / 6 }

// failoverStarts returns n delays, one for each failover of an
// implementation in a round, spread evenly over one tick in random order
// (one at a random point of each n-th of it).
//
// The server expires a session at the first multiple of its tickTime
// after the timeout since it last heard the client (its ExpiryQueue
// rounds expiry times up to the tick), so the expiry falls 0 to 1 tick
// later than the timeout, by where the leader's last bytes fall within
// the tick. One failover follows another at once, and the previous one
// ended at an expiry — at a multiple of the tick: an implementation whose
// setup takes the same time every failover has its leader's last bytes
// at the same point of the tick every time, and so the same rounding;
// another implementation, whose setup takes longer, another. Measured:
// the zkrecipes leader's node went 1.714–1.745 s after 14 of 15 cuts and
// Curator's 1.675–1.791 s, a 30 ms difference of medians that was the
// rounding's, not the libraries'. A delay spread over the tick before
// each failover gives every implementation the same spread of points.
func failoverStarts(n int, tick time.Duration) []time.Duration {
	ds := make([]time.Duration, n)
	if n == 0 {
		return ds
	}
	width := max(tick/time.Duration(n), 1)
	for i, k := range rand.Perm(n) {
		ds[i] = time.Duration(k)*tick/time.Duration(n) + rand.N(width)
	}
	return ds
}

// serverTick returns the first server's tickTime, which it tells in conf;
// if it does not, half the session timeout (the most a tick can be: a
// server grants at least two ticks), over which the starts are spread
// about as evenly.
func serverTick(servers []string, timeout time.Duration) time.Duration {
	out, err := zkserver.FourLetter(servers[0], "conf", time.Second)
	if err == nil {
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tickTime="); ok {
				if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
					return time.Duration(ms) * time.Millisecond
				}
			}
		}
	}
	return timeout / 2
}

// errRunAgain means a failover is to be run again: the leader's client
// sent bytes as the proxy went silent (errCutRace: the cut was not at the
// chosen point), or the peer's driver was stuck.
var (
	errRunAgain = errors.New("bench: run the failover again")
	errCutRace  = fmt.Errorf("%w: the leader spoke as it was cut off", errRunAgain)
)

// cutQuiet makes proxy silent once the client behind it has been silent
// for quiet, and returns the moment of the cut: quiet after the client's
// last bytes reached the server. The proxy may act later than that moment
// (this process is not always scheduled at once); nothing passed in
// between, so the server, the standby and the leader's client are where a
// cut at that moment would have left them, and the failover is timed from
// it. If the client spoke in between, the wait starts over; if it spoke as
// the proxy went silent, the error is errCutRace.
func cutQuiet(ctx context.Context, proxy *zkserver.Proxy, quiet time.Duration) (time.Time, error) {
	for {
		last := proxy.LastHeard()
		if wait := time.Until(last.Add(quiet)); wait > 0 {
			if err := sleepCtx(ctx, wait); err != nil {
				return time.Time{}, err
			}
			continue // it may have spoken meanwhile
		}
		proxy.Blackhole()
		if !proxy.LastHeard().Equal(last) {
			return time.Time{}, errCutRace
		}
		return last.Add(quiet), nil
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leaderGone watches the first candidate of the election at dir from
// observer, a session of its own on the standby's server: the channel
// gets the time its deletion was heard there, as the standby hears it.
func leaderGone(ctx context.Context, observer *connection.Client, dir string) (<-chan time.Time, error) {
	children, _, err := observer.Children(ctx, dir)
	if err != nil {
		return nil, err
	}
	first := ""
	for _, c := range children {
		if first == "" || c[max(0, len(c)-10):] < first[max(0, len(first)-10):] {
			first = c
		}
	}
	if first == "" {
		return nil, errors.New("bench: no candidate in the election")
	}
	ok, _, w, err := observer.ExistsWatch(ctx, dir+"/"+first)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("bench: the leader's node %s is gone before the cut", first)
	}
	out := make(chan time.Time, 1)
	connx.AfterFire(w, func(zk.Event) { out <- time.Now() })
	return out, nil
}

// runFailover: a leader whose connection goes through a proxy, a standby
// waiting on another server; the proxy goes silent (the leader's session
// expires on the server), and the time until the standby's Campaign
// returns is the failover.
func runFailover(ctx context.Context, servers []string, path string, timeout time.Duration) (failover, error) {
	proxy, err := zkserver.NewProxy(servers[:1])
	if err != nil {
		return failover{}, err
	}
	defer proxy.Close()
	open := func(s []string) (*connection.Client, error) {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return connection.Open(octx, s, connection.WithSessionTimeout(timeout))
	}
	lc, err := open(proxy.Servers())
	if err != nil {
		return failover{}, err
	}
	defer lc.Close()
	sc, err := open(pin(servers, 1))
	if err != nil {
		return failover{}, err
	}
	defer sc.Close()
	oc, err := open(pin(servers, 1))
	if err != nil {
		return failover{}, err
	}
	defer oc.Close()
	leader, err := election.New(lc, path, "leader")
	if err != nil {
		return failover{}, err
	}
	if _, err := leader.Campaign(ctx); err != nil {
		return failover{}, err
	}
	standby, err := election.New(sc, path, "standby")
	if err != nil {
		return failover{}, err
	}
	type won struct {
		t   *election.Term
		at  time.Time
		err error
	}
	elected := make(chan won, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		t, err := standby.Campaign(cctx)
		elected <- won{t, time.Now(), err}
	}()
	defer func() {
		cancel()
		if w := <-elected; w.err == nil {
			_ = w.t.Resign(ctx)
		}
	}()
	for {
		ps, err := standby.Participants(ctx)
		if err != nil {
			return failover{}, err
		}
		if len(ps) == 2 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	gone, err := leaderGone(ctx, oc, path)
	if err != nil {
		return failover{}, err
	}
	cut, err := cutQuiet(ctx, proxy, failoverQuiet(timeout))
	if err != nil {
		return failover{}, err
	}
	w := <-elected
	elected <- w // for the deferred resign
	if w.err != nil {
		return failover{}, w.err
	}
	g := <-gone
	return failover{elected: w.at.Sub(cut), gone: g.Sub(cut), reaction: w.at.Sub(g), negotiated: sc.Session().Timeout()}, nil
}

// curatorFailover is runFailover with Curator's LeaderLatch in the driver.
func curatorFailover(ctx context.Context, servers []string, path string, timeout time.Duration) (failover, error) {
	proxy, err := zkserver.NewProxy(servers[:1])
	if err != nil {
		return failover{}, err
	}
	defer proxy.Close()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	oc, err := connection.Open(octx, pin(servers, 1), connection.WithSessionTimeout(timeout))
	cancel()
	if err != nil {
		return failover{}, err
	}
	defer oc.Close()
	d, err := curatorPeer.start(ctx, servers[1%len(servers):], path, "failover", strings.Join(proxy.Servers(), ","), strconv.Itoa(int(timeout.Milliseconds())))
	if err != nil {
		return failover{}, err
	}
	defer d.cmd.Process.Kill()
	// A LeaderLatch has been seen (1 in some 50 failovers, on a machine
	// loaded with other ensembles) never to lead with no other candidate:
	// a driver silent for long is ended, and the failover run again.
	var stuck atomic.Bool
	watchdog := time.AfterFunc(time.Minute, func() {
		stuck.Store(true)
		d.cmd.Process.Kill()
	})
	defer watchdog.Stop()
	neg, err := d.next("READY")
	if err != nil {
		if stuck.Load() {
			return failover{}, fmt.Errorf("%w: %w", errRunAgain, err)
		}
		return failover{}, err
	}
	ms, err := strconv.Atoi(neg)
	if err != nil {
		return failover{}, fmt.Errorf("the Curator driver said READY %q", neg)
	}
	gone, err := leaderGone(ctx, oc, path)
	if err != nil {
		return failover{}, err
	}
	cut, err := cutQuiet(ctx, proxy, failoverQuiet(timeout))
	if err != nil {
		return failover{}, err
	}
	if _, err := d.next("ELECTED"); err != nil {
		if stuck.Load() {
			return failover{}, fmt.Errorf("%w: %w", errRunAgain, err)
		}
		return failover{}, err
	}
	at := time.Now()
	g := <-gone
	return failover{elected: at.Sub(cut), gone: g.Sub(cut), reaction: at.Sub(g), negotiated: time.Duration(ms) * time.Millisecond}, d.wait()
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
