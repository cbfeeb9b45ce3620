package bench

import (
	"cmp"
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
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// The markers of the Curator queues' section in benchmarks.md, so that a
// run of that scenario alone (--scenarios curatorqueue --docs) replaces
// it in place.
const (
	CuratorQueueBegin = "<!-- curatorqueue:begin -->"
	CuratorQueueEnd   = "<!-- curatorqueue:end -->"
)

// CuratorQueueConfig says how to measure the curatorqueue package against
// Curator's own queues.
type CuratorQueueConfig struct {
	Servers   []string
	Curator   bool // run Curator 5.4's queues beside (the driver in internal/testinfra/peers)
	Rounds    int  // results are medians over the rounds
	Consumers int  // DistributedQueue consumers, each with its own session
	Items     int  // items per run
	Progress  io.Writer
}

// The rows of the Curator queues' table, in its order.
const (
	cqPlain  = "DistributedQueue"
	cqLocked = "DistributedQueue, lock path"
	cqMixed  = "DistributedQueue, Curator's items"
	cqSimple = "SimpleDistributedQueue"
)

var cqRows = []string{cqPlain, cqLocked, cqMixed, cqSimple}

// CuratorQueueResults are medians over the rounds, by row, then by
// implementation ("zkrecipes", "Curator").
type CuratorQueueResults struct {
	Cfg      CuratorQueueConfig
	Rate     map[string]map[string]float64 // items per second
	Requests map[string]map[string]float64 // packets the servers received per item (0: mntr did not answer)
}

// queueRun is what one run measured: the items taken, the time they took
// and the packets the servers received meanwhile (0 if mntr did not
// answer).
type queueRun struct {
	items   int
	elapsed time.Duration
	packets int64
}

// warmItems is the items of a run's warm-up, as many in Curator's
// driver (CuratorBench.java).
func warmItems(n int) int { return max(n/10, 10) }

func (r queueRun) rate() float64 { return float64(r.items) / r.elapsed.Seconds() }

func (r queueRun) perItem() float64 { return float64(r.packets) / float64(r.items) }

// RunCuratorQueue runs, in each round, every row with zkrecipes and with
// Curator, in alternating order: Consumers consumers of a DistributedQueue taking Items items
// put beforehand, without and with a lock path; the zkrecipes consumers
// taking items Curator put (no Curator column); one producer and one
// consumer of a SimpleDistributedQueue. Every run warms up first on a
// queue of its own with warmItems of the items, on the same sessions.
func RunCuratorQueue(ctx context.Context, cfg CuratorQueueConfig) (*CuratorQueueResults, error) {
	if cfg.Rounds < 1 || cfg.Consumers < 1 || cfg.Items < 1 || len(cfg.Servers) == 0 {
		return nil, errors.New("bench: the curatorqueue scenario needs servers and positive rounds, consumers and items")
	}
	progress := orDiscard(cfg.Progress)
	root := fmt.Sprintf("/zkrecipes-bench-curatorqueue/%d", time.Now().UnixNano())
	next := pathSeq(root)
	rates, reqs := map[string]map[string][]float64{}, map[string]map[string][]float64{}
	record := func(round int, row, impl string, r queueRun) {
		if rates[row] == nil {
			rates[row], reqs[row] = map[string][]float64{}, map[string][]float64{}
		}
		rates[row][impl] = append(rates[row][impl], r.rate())
		reqs[row][impl] = append(reqs[row][impl], r.perItem())
		fmt.Fprintf(progress, "round %d/%d  %-10s %-34s %6.0f items/s  %5.2f requests/item\n", round, cfg.Rounds, impl, row, r.rate(), r.perItem())
	}
	var curator *curatorQueues
	if cfg.Curator {
		var err error
		if curator, err = startCuratorQueues(ctx, cfg.Servers, root, cfg.Consumers, cfg.Items); err != nil {
			return nil, fmt.Errorf("the Curator queues' driver: %w", err)
		}
		defer curator.d.cmd.Process.Kill()
	}
	for round := 1; round <= cfg.Rounds; round++ {
		// Each row's runs, zkrecipes first in odd rounds and Curator first
		// in even ones, so that neither always follows the other.
		pair := func(row string, goRun, curatorRun func() (queueRun, error)) error {
			runs := []struct {
				impl string
				run  func() (queueRun, error)
			}{{"zkrecipes", goRun}, {"Curator", curatorRun}}
			if !cfg.Curator {
				runs = runs[:1]
			} else if round%2 == 0 {
				runs[0], runs[1] = runs[1], runs[0]
			}
			for _, x := range runs {
				r, err := x.run()
				if err != nil {
					return fmt.Errorf("%s, %s: %w", row, x.impl, err)
				}
				record(round, row, x.impl, r)
			}
			return nil
		}
		for _, row := range []string{cqPlain, cqLocked} {
			locks := func(path string) string {
				if row == cqLocked {
					return path + "-locks"
				}
				return ""
			}
			err := pair(row, func() (queueRun, error) {
				path := next()
				return runGoDistQueue(ctx, cfg.Servers, path, locks(path), cfg.Consumers, cfg.Items, true)
			}, func() (queueRun, error) {
				path := next()
				return curator.run(cfg.Servers, "distqueue "+path+" "+cmp.Or(locks(path), "-"))
			})
			if err != nil {
				return nil, err
			}
		}
		if cfg.Curator {
			path := next()
			if err := curator.put(path); err != nil {
				return nil, fmt.Errorf("%s, Curator's puts: %w", cqMixed, err)
			}
			r, err := runGoDistQueue(ctx, cfg.Servers, path, "", cfg.Consumers, cfg.Items, false)
			if err != nil {
				return nil, fmt.Errorf("%s, zkrecipes: %w", cqMixed, err)
			}
			record(round, cqMixed, "zkrecipes", r)
		}
		err := pair(cqSimple, func() (queueRun, error) {
			return runGoSimpleQueue(ctx, cfg.Servers, next(), cfg.Items)
		}, func() (queueRun, error) {
			return curator.run(cfg.Servers, "simplequeue "+next())
		})
		if err != nil {
			return nil, err
		}
	}
	if curator != nil {
		if err := curator.close(); err != nil {
			return nil, fmt.Errorf("the Curator queues' driver: %w", err)
		}
	}
	res := &CuratorQueueResults{Cfg: cfg, Rate: map[string]map[string]float64{}, Requests: map[string]map[string]float64{}}
	for row, byImpl := range rates {
		res.Rate[row], res.Requests[row] = map[string]float64{}, map[string]float64{}
		for impl, xs := range byImpl {
			res.Rate[row][impl] = median(xs)
			res.Requests[row][impl] = median(reqs[row][impl])
		}
	}
	return res, nil
}

// curatorQueues is Curator's queues driver (CuratorBench.java's queues
// scenario): one JVM for the whole scenario, its sessions opened once,
// steered a command at a time.
type curatorQueues struct {
	d     *driver
	items int
}

func startCuratorQueues(ctx context.Context, servers []string, root string, consumers, items int) (*curatorQueues, error) {
	d, err := curatorPeer.start(ctx, servers, root, "queues", strconv.Itoa(consumers), strconv.Itoa(items))
	if err != nil {
		return nil, err
	}
	if _, err := d.next("CONNECTED"); err != nil {
		d.cmd.Process.Kill()
		return nil, err
	}
	return &curatorQueues{d: d, items: items}, nil
}

// run sends a run's command (distqueue or simplequeue), which answers
// READY once warmed up with its items in place, starts on "go" and
// answers RESULT <items taken> <ns>, which must be all the items; the
// packets are those the servers received between the two.
func (q *curatorQueues) run(servers []string, command string) (queueRun, error) {
	if err := q.d.send(command); err != nil {
		return queueRun{}, err
	}
	if _, err := q.d.next("READY"); err != nil {
		return queueRun{}, err
	}
	before, err0 := packetsReceived(servers)
	if err := q.d.send("go"); err != nil {
		return queueRun{}, err
	}
	res, err := q.d.next("RESULT")
	if err != nil {
		return queueRun{}, err
	}
	after, err1 := packetsReceived(servers)
	var r queueRun
	var ns int64
	if _, err := fmt.Sscanf(res, "%d %d", &r.items, &ns); err != nil {
		return queueRun{}, fmt.Errorf("%s driver said RESULT %q: %w", q.d.name, res, err)
	}
	if r.items != q.items {
		return queueRun{}, fmt.Errorf("%s driver: %d items taken of %d", q.d.name, r.items, q.items)
	}
	r.elapsed = time.Duration(ns)
	if err0 == nil && err1 == nil {
		r.packets = after - before
	}
	return r, nil
}

// put has the driver put the items at path, one DistributedQueue message
// each, and waits until they are in.
func (q *curatorQueues) put(path string) error {
	if err := q.d.send("put " + path); err != nil {
		return err
	}
	_, err := q.d.next("PUT")
	return err
}

// close ends the driver: it closes its sessions and exits.
func (q *curatorQueues) close() error {
	if err := q.d.send("quit"); err != nil {
		q.d.cmd.Process.Kill()
		return err
	}
	return q.d.wait()
}

// items is the items of a run, 0 to n-1 as decimal text, and which have
// been taken.
type items struct {
	taken []atomic.Bool
	count atomic.Int64
}

func newItems(n int) *items { return &items{taken: make([]atomic.Bool, n)} }

func itemBytes(i int) []byte { return []byte(strconv.Itoa(i)) }

// take records an item taken: an error if it is not one of the run's or
// was taken before; otherwise whether it was the last.
func (it *items) take(b []byte) (last bool, err error) {
	i, err := strconv.Atoi(string(b))
	if err != nil || i < 0 || i >= len(it.taken) {
		return false, fmt.Errorf("took %q, not an item of this run", b)
	}
	if it.taken[i].Swap(true) {
		return false, fmt.Errorf("item %d taken twice", i)
	}
	return it.count.Add(1) == int64(len(it.taken)), nil
}

// runGoDistQueue opens a producer on the first server and consumers
// sessions (consumer i on server i mod the servers), each with a
// curatorqueue.Queue at path (under lockPath, if given); warms up on
// path-warm; puts the items at path if put is set (else they are there
// already); and times the consumers taking (and, under a lock path,
// consuming) every item, in a loop of Take each.
func runGoDistQueue(ctx context.Context, servers []string, path, lockPath string, consumers, n int, put bool) (queueRun, error) {
	pc, err := openClient(ctx, servers[:1])
	if err != nil {
		return queueRun{}, err
	}
	defer pc.Close()
	clients, err := openClients(ctx, servers, consumers)
	if err != nil {
		return queueRun{}, err
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	queues := func(path, lockPath string) ([]*curatorqueue.Queue, error) {
		var opts []curatorqueue.Option
		if lockPath != "" {
			opts = append(opts, curatorqueue.WithLockPath(lockPath))
		}
		qs := make([]*curatorqueue.Queue, consumers)
		for i, c := range clients {
			if qs[i], err = curatorqueue.New(c, path, opts...); err != nil {
				return nil, err
			}
		}
		return qs, nil
	}
	// The puts go from putters goroutines, pipelined on the producer's
	// connection: they are not timed, and the queue's order does not
	// matter to the consumers' count.
	putItems := func(path string, n int) error {
		q, err := curatorqueue.New(pc, path)
		if err != nil {
			return err
		}
		defer q.Close(ctx)
		const putters = 16
		errs := make(chan error, putters)
		for g := range putters {
			go func() {
				for i := g; i < n; i += putters {
					if _, err := q.Put(ctx, itemBytes(i)); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		var all error
		for range putters {
			all = errors.Join(all, <-errs)
		}
		return all
	}
	warm := warmItems(n)
	warmLocks := ""
	if lockPath != "" {
		warmLocks = lockPath + "-warm"
	}
	wq, err := queues(path+"-warm", warmLocks)
	if err != nil {
		return queueRun{}, err
	}
	if err := putItems(path+"-warm", warm); err != nil {
		return queueRun{}, err
	}
	if _, err := consumeAll(ctx, wq, warm); err != nil {
		return queueRun{}, fmt.Errorf("warm-up: %w", err)
	}
	if put {
		if err := putItems(path, n); err != nil {
			return queueRun{}, err
		}
	}
	qs, err := queues(path, lockPath)
	if err != nil {
		return queueRun{}, err
	}
	before, err0 := packetsReceived(servers)
	elapsed, err := consumeAll(ctx, qs, n)
	if err != nil {
		return queueRun{}, err
	}
	after, err1 := packetsReceived(servers)
	r := queueRun{items: n, elapsed: elapsed}
	if err0 == nil && err1 == nil {
		r.packets = after - before
	}
	return r, nil
}

// openClients opens n sessions at once, session i on server i mod the
// servers; on failure it closes those it opened.
func openClients(ctx context.Context, servers []string, n int) ([]*connection.Client, error) {
	clients := make([]*connection.Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i], errs[i] = openClient(ctx, pin(servers, i))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return clients, nil
}

// consumeAll has each queue take in a loop of its own until the n items
// are taken, each exactly once, and returns the time from the start to
// the last; then it closes the queues.
func consumeAll(ctx context.Context, qs []*curatorqueue.Queue, n int) (time.Duration, error) {
	its := newItems(n)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		elapsed  time.Duration
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		stop()
	}
	start := time.Now()
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := q.Take(wctx)
				if wctx.Err() != nil {
					if m != nil && m.Locked() {
						m.Release(ctx) // taken as the run ended: back in the queue
					}
					return
				}
				if err != nil {
					fail(err)
					return
				}
				var last bool
				for _, item := range m.Items() {
					l, err := its.take(item)
					if err != nil {
						fail(err)
						return
					}
					last = last || l
				}
				if err := m.Consume(ctx); err != nil {
					fail(err)
					return
				}
				if last {
					elapsed = time.Since(start)
					stop()
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, q := range qs {
		q.Close(ctx)
	}
	if firstErr != nil {
		return 0, firstErr
	}
	if got := its.count.Load(); got != int64(n) {
		return 0, fmt.Errorf("%d items of %d taken: %w", got, n, ctx.Err())
	}
	return elapsed, nil
}

// runGoSimpleQueue has a producer on the first server offer the items to
// a curatorqueue.Simple at path, one after another, while a consumer on
// the second takes them; after a warm-up on path-warm, it times the run
// from the first offer to the last take, and checks that the items came
// in the order they were offered.
func runGoSimpleQueue(ctx context.Context, servers []string, path string, n int) (queueRun, error) {
	pc, err := openClient(ctx, pin(servers, 0))
	if err != nil {
		return queueRun{}, err
	}
	defer pc.Close()
	cc, err := openClient(ctx, pin(servers, 1))
	if err != nil {
		return queueRun{}, err
	}
	defer cc.Close()
	run := func(path string, n int) (time.Duration, error) {
		producer, err := curatorqueue.NewSimple(pc, path)
		if err != nil {
			return 0, err
		}
		consumer, err := curatorqueue.NewSimple(cc, path)
		if err != nil {
			return 0, err
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		taken := make(chan error, 1)
		start := time.Now()
		go func() {
			for i := range n {
				b, err := consumer.Take(cctx)
				if err == nil && string(b) != string(itemBytes(i)) {
					err = fmt.Errorf("took %q where %d was next", b, i)
				}
				if err != nil {
					taken <- err
					return
				}
			}
			taken <- nil
		}()
		for i := range n {
			if err := producer.Offer(ctx, itemBytes(i)); err != nil {
				cancel()
				<-taken
				return 0, err
			}
		}
		if err := <-taken; err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	if _, err := run(path+"-warm", warmItems(n)); err != nil {
		return queueRun{}, fmt.Errorf("warm-up: %w", err)
	}
	before, err0 := packetsReceived(servers)
	elapsed, err := run(path, n)
	if err != nil {
		return queueRun{}, err
	}
	after, err1 := packetsReceived(servers)
	r := queueRun{items: n, elapsed: elapsed}
	if err0 == nil && err1 == nil {
		r.packets = after - before
	}
	return r, nil
}

// Markdown renders one row per queue: items per second of zkrecipes and
// of Curator with Curator ÷ zkrecipes, then the requests per item of
// each.
func (r *CuratorQueueResults) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d rounds.\n\n", r.Cfg.Rounds)
	b.WriteString("| queue | zkrecipes items/s | Curator items/s | Curator ÷ zkrecipes | zkrecipes requests/item | Curator requests/item |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	cell := func(m map[string]float64, impl, format string) string {
		if v, ok := m[impl]; ok {
			return fmt.Sprintf(format, v)
		}
		return ""
	}
	for _, row := range cqRows {
		rate, ok := r.Rate[row]
		if !ok {
			continue
		}
		label := row
		switch row {
		case cqPlain, cqLocked, cqMixed:
			label = fmt.Sprintf("%s: %d consumers, %d items", row, r.Cfg.Consumers, r.Cfg.Items)
		case cqSimple:
			label = fmt.Sprintf("%s: a producer and a consumer, %d items", row, r.Cfg.Items)
		}
		ratio := ""
		if c, ok := rate["Curator"]; ok && rate["zkrecipes"] > 0 {
			ratio = fmt.Sprintf("%.2f", c/rate["zkrecipes"])
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", label,
			cell(rate, "zkrecipes", "%.0f"), cell(rate, "Curator", "%.0f"), ratio,
			cell(r.Requests[row], "zkrecipes", "%.2f"), cell(r.Requests[row], "Curator", "%.2f"))
	}
	return b.String()
}

// CuratorQueueMethod says how the Curator queues' figures were measured.
func CuratorQueueMethod(cfg CuratorQueueConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The curatorqueue package (`recipes/curatorqueue`) against Curator 5.4's own queues, on the same layout and the same bytes: item *i* is the decimal text of *i*, which Curator's driver puts through a serializer that passes bytes through. Every run has sessions of its own and first warms up on a queue of its own with a tenth of the items (at least 10), on the same sessions; Curator's driver runs in one JVM for the whole scenario, its sessions opened once. Implementations alternate within each round, which goes first alternating from round to round. *Requests/item* is the packets the servers received during the timed part (`mntr`'s `zk_packets_received` summed over the servers, pings included), per item.\n\n")
	fmt.Fprintf(&b, "- **DistributedQueue**: a producer on the first server puts %d items, one message each (pipelined, not timed), before %d consumers, each with its own session (consumer *i* on server *i* mod 3), start; the time from their start to the last item taken. zkrecipes: a `curatorqueue.Queue` per consumer in a loop of `Take` (and `Consume`); Curator: a DistributedQueue with a QueueConsumer per consumer, `start()`ed together. Without a lock path a message is deleted as it is taken (at most once); *with a lock path* (`WithLockPath`, Curator's `QueueBuilder.lockPath`) a consumer creates the message's lock node, reads the message, and deletes both once consumed (at least once). Each item must be taken exactly once.\n", cfg.Items, cfg.Consumers)
	fmt.Fprintf(&b, "- **Curator's items**: the same %d zkrecipes consumers without a lock path, taking %d items Curator's DistributedQueue put — the direction of a Java producer and Go consumers.\n", cfg.Consumers, cfg.Items)
	fmt.Fprintf(&b, "- **SimpleDistributedQueue**: a producer on the first server offers %d items one after another while a consumer on the second takes them (zkrecipes `curatorqueue.Simple`, Curator's SimpleDistributedQueue, a thread each); the time from the first offer to the last take, every item in order.\n", cfg.Items)
	return b.String()
}
