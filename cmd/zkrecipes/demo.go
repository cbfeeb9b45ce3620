package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
)

func runDemo(ctx context.Context, args []string, out, _ io.Writer) error {
	fs := newFlags("demo", "", out)
	servers := fs.String("servers", invocationFrom(ctx).flags.servers, "ZooKeeper servers, host:port,... (default: ZK_SERVERS, else a local server started for the demo)")
	workers := fs.Int("workers", 5, "workers taking the lock in turn")
	waiters := fs.Int("waiters", 20, "waiters in the herd comparison")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *workers < 1 || *waiters < 2 {
		return fmt.Errorf("--workers must be at least 1 and --waiters at least 2")
	}
	list, stop, err := serversOrLocal(*servers, 1, out)
	if err != nil {
		return err
	}
	defer stop()
	d := &demo{out: out, servers: list, root: fmt.Sprintf("/zkrecipes-demo/%d", time.Now().UnixNano())}
	defer d.closeAll()
	admin, err := d.client(ctx)
	if err != nil {
		return fmt.Errorf("connect to %v: %w", list, err)
	}
	defer d.cleanup(admin)

	if err := d.fairOrder(ctx, *workers); err != nil {
		return err
	}
	return d.herd(ctx, *waiters)
}

type demo struct {
	out     io.Writer
	servers []string
	root    string

	mu      sync.Mutex
	clients []*connection.Client
}

// client opens a session of its own: each worker is a separate process in
// real life.
func (d *demo) client(ctx context.Context) (*connection.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, d.servers, connection.WithSessionTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.clients = append(d.clients, c)
	d.mu.Unlock()
	return c, nil
}

func (d *demo) closeAll() {
	for _, c := range d.clients {
		c.Close()
	}
}

// cleanup removes what the demo made (lock directories are containers,
// which the server would also remove on its own).
func (d *demo) cleanup(c *connection.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range []string{d.root + "/fair", d.root + "/mutex", d.root + "/naive", d.root} {
		_ = c.Delete(ctx, p, -1)
	}
}

// queue starts n participants one after another, so that their queue
// order is known, and waits until each is queued behind the holder.
func (d *demo) fairOrder(ctx context.Context, n int) error {
	lock := d.root + "/fair"
	fmt.Fprintf(d.out, "\n== Fair locking: %d workers, each with its own session, queue for %s\n", n, lock)
	first, err := d.client(ctx)
	if err != nil {
		return err
	}
	gate, _ := mutex.New(first, lock, mutex.WithData([]byte("gate")))
	if err := gate.Lock(ctx); err != nil {
		return err
	}
	type result struct {
		worker int
		token  int64
		node   string
		err    error
	}
	results := make(chan result, n)
	var release sync.WaitGroup
	for i := 1; i <= n; i++ {
		c, err := d.client(ctx)
		if err != nil {
			return err
		}
		m, _ := mutex.New(c, lock, mutex.WithData([]byte(fmt.Sprintf("worker %d", i))))
		release.Add(1)
		go func() {
			defer release.Done()
			if err := m.Lock(ctx); err != nil {
				results <- result{worker: i, err: err}
				return
			}
			results <- result{worker: i, token: m.Token(), node: m.Node()}
			time.Sleep(100 * time.Millisecond) // the work under the lock
			if err := m.Unlock(ctx); err != nil {
				results <- result{worker: i, err: err}
			}
		}()
		if err := waitQueued(ctx, first, lock, i+1); err != nil {
			return err
		}
	}
	ps, err := gate.Participants(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(d.out, "Queue, in sequence order (the holder first):")
	for _, p := range ps {
		fmt.Fprintf(d.out, "  %s  %-10s  session %#x\n", p.Seq, p.Data, p.Session)
	}
	fmt.Fprintln(d.out, "The gate releases; each worker holds in turn, then releases:")
	if err := gate.Unlock(ctx); err != nil {
		return err
	}
	var last int64
	for range n {
		r := <-results
		if r.err != nil {
			return fmt.Errorf("worker %d: %w", r.worker, r.err)
		}
		order := "increasing"
		if r.token <= last {
			order = "NOT INCREASING"
		}
		last = r.token
		fmt.Fprintf(d.out, "  worker %d holds the lock  fencing token %d (%s)  node ...%s\n", r.worker, r.token, order, r.node[len(r.node)-15:])
	}
	release.Wait()
	fmt.Fprintln(d.out, "Workers were served in the order they queued; a storage system that keeps the")
	fmt.Fprintln(d.out, "highest token it has seen can refuse a write from an older holder.")
	return nil
}

func waitQueued(ctx context.Context, c *connection.Client, lock string, n int) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		ps, err := mutex.Participants(ctx, c, lock)
		if err != nil {
			return err
		}
		if len(ps) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d participants queued", len(ps), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// locker is what both locks offer.
type locker interface {
	Lock(context.Context) error
	Unlock(context.Context) error
}

// herd counts the watch notifications the waiters' sessions receive while
// they wait, as a queue of waiters drains through each lock, one holder at
// a time. (A holder also hears its own node's deletion when it releases:
// that wakes no waiter, and is not counted.)
func (d *demo) herd(ctx context.Context, n int) error {
	fmt.Fprintf(d.out, "\n== The herd effect: %d waiters behind one holder, all released in turn\n", n)
	for _, kind := range []string{"naive", "mutex"} {
		woken, releases, first, err := d.drain(ctx, kind, n)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		fmt.Fprintf(d.out, "  %-5s the first release woke %2d of %d waiters; %d releases woke waiters %3d times (%.2f per release)\n",
			kind, first, n, releases, woken, float64(woken)/float64(releases))
	}
	fmt.Fprintln(d.out, "The naive lock's waiters all watch one node, so every release wakes all of them;")
	fmt.Fprintln(d.out, "each mutex waiter watches only the node before it (and the one before that).")
	return nil
}

func (d *demo) drain(ctx context.Context, kind string, n int) (woken int64, releases int, first int, err error) {
	path := d.root + "/" + kind
	newLock := func(c *connection.Client) (locker, error) {
		if kind == "naive" {
			return naive.New(c, path+"/lock")
		}
		return mutex.New(c, path)
	}
	hc, err := d.client(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	holder, err := newLock(hc)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := holder.Lock(ctx); err != nil {
		return 0, 0, 0, err
	}
	clients := make([]*connection.Client, n)
	atLock := make([]int64, n) // notifications when the waiter's Lock returned
	errs := make(chan error, n)
	acquired := make(chan struct{}, n)
	proceed := make(chan struct{})
	for i := range n {
		if clients[i], err = d.client(ctx); err != nil {
			return 0, 0, 0, err
		}
		l, err := newLock(clients[i])
		if err != nil {
			return 0, 0, 0, err
		}
		go func() {
			if err := l.Lock(ctx); err != nil {
				errs <- err
				return
			}
			atLock[i] = clients[i].Stats().Notifications
			acquired <- struct{}{}
			<-proceed
			errs <- l.Unlock(ctx)
		}()
	}
	// Let every waiter set its watch.
	time.Sleep(time.Second)
	before := make([]int64, n)
	for i, c := range clients {
		before[i] = c.Stats().Notifications
	}
	if err := holder.Unlock(ctx); err != nil {
		return 0, 0, 0, err
	}
	select {
	case <-acquired:
	case err := <-errs:
		return 0, 0, 0, err
	}
	time.Sleep(200 * time.Millisecond) // let the first release's notifications arrive
	for i, c := range clients {
		if c.Stats().Notifications > before[i] {
			first++
		}
	}
	close(proceed)
	for range n {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			return 0, 0, 0, err
		}
	}
	for i := range clients {
		woken += atLock[i] - before[i]
	}
	return woken, n + 1, first, nil
}
