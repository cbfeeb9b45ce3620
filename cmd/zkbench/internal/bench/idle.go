package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// Idle is what waiters cost while they wait: one client (one session) on
// the first server holds Locks locks and queues PerLock waiters behind
// each, a fleet's idle waiters in one process.
type Idle struct {
	Impl    string
	Waiters int
	// RSS is the resident memory the process gained with the waiters, as
	// the kernel counts it (after a garbage collection), whatever the
	// language.
	RSS int64
	// HeapStack is the Go runtime's heap and stacks in use that the
	// waiters added; 0 for the peers.
	HeapStack int64
	// Threads is the goroutines (Go) or threads (Curator, Kazoo) the
	// waiters added.
	Threads int
	// Watches is the watches the servers hold for the waiters (mntr's
	// zk_watch_count).
	Watches int64
	// CPU is the process's CPU time per second of waiting; Base is the
	// same before the waiters came: the session's pings and the runtime.
	CPU, Base time.Duration
}

// PerWaiter divides by the waiters.
func (r Idle) PerWaiter(v int64) float64 { return float64(v) / float64(max(1, r.Waiters)) }

// DefaultIdleWindow is how long the CPU of an idle process is measured:
// the kernel counts it in ticks of 10 ms.
const DefaultIdleWindow = 5 * time.Second

// RunIdle measures impl's idle waiters ("mutex" and "zk.Lock" in this
// process, "Curator" and "Kazoo" in their drivers) under root, with the
// CPU measured over window.
func RunIdle(ctx context.Context, impl string, servers []string, root string, locks, perLock int, window time.Duration) (Idle, error) {
	switch impl {
	case "Curator":
		return peerIdle(ctx, curatorPeer, servers, root, locks, perLock, window)
	case "Kazoo":
		return peerIdle(ctx, kazooPeer, servers, root, locks, perLock, window)
	case "mutex", "zk.Lock":
		return localIdle(ctx, impl, servers, root, locks, perLock, window)
	}
	return Idle{}, fmt.Errorf("bench: no idle-waiter implementation %q", impl)
}

// idleProbe is what is read of a process before and after the waiters.
type idleProbe struct {
	rss, heapStack int64
	threads        int
	watches        int64
}

// localIdle runs the waiters in this process: goroutines blocked in Lock.
func localIdle(ctx context.Context, impl string, servers []string, root string, locks, perLock int, window time.Duration) (res Idle, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	one := pin(servers, 0)
	var newLock func(path string) (lockUnlock, error)
	switch impl {
	case "mutex":
		c, err := openClient(ctx, one)
		if err != nil {
			return Idle{}, err
		}
		defer c.Close()
		newLock = func(path string) (lockUnlock, error) { return mutex.New(c, path) }
	default:
		p, err := openPlain(one)
		if err != nil {
			return Idle{}, err
		}
		defer p.Close()
		newLock = func(path string) (lockUnlock, error) {
			return &zkLock{plain: p, l: zk.NewLock(p.conn, path, zk.WorldACL(zk.PermAll))}, nil
		}
	}
	var holders []lockUnlock
	for l := range locks {
		h, err := newLock(fmt.Sprintf("%s/lock-%d", root, l))
		if err != nil {
			return Idle{}, err
		}
		if err := h.Lock(ctx); err != nil {
			return Idle{}, err
		}
		holders = append(holders, h)
	}
	pid := os.Getpid()
	before, base, err := probeIdle(ctx, servers, pid, window, nil)
	if err != nil {
		return Idle{}, err
	}
	var wg sync.WaitGroup
	for l := range locks {
		for range perLock {
			w, err := newLock(fmt.Sprintf("%s/lock-%d", root, l))
			if err != nil {
				return Idle{}, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if w.Lock(ctx) == nil {
					_ = w.Unlock(context.Background())
				}
			}()
		}
	}
	// The waiters end by taking their lock in turn once the holders let
	// go (or, the mutex, when ctx is cancelled). Closing zk.Lock's
	// connection under waiting zk.Locks can block go-zookeeper's loop for
	// good (three answers on a two-slot channel), and them with it.
	defer func() {
		if impl == "mutex" {
			cancel()
		}
		for _, h := range holders {
			_ = h.Unlock(context.Background())
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			if err == nil {
				err = fmt.Errorf("idle waiters of %s: not all ended 5 minutes after their holders let go", impl)
			}
		}
	}()
	if err := waitForNodes(ctx, servers, root, locks, perLock); err != nil {
		return Idle{}, err
	}
	after, cpu, err := probeIdle(ctx, servers, pid, window, nil)
	if err != nil {
		return Idle{}, err
	}
	return idleResult(impl, locks*perLock, before, after, base, cpu), nil
}

// peerIdle runs the waiters in a peer's driver: threads blocked in
// acquire.
func peerIdle(ctx context.Context, p *peer, servers []string, root string, locks, perLock int, window time.Duration) (Idle, error) {
	drv, err := p.start(ctx, pin(servers, 0), root, "idle", strconv.Itoa(locks), strconv.Itoa(perLock))
	if err != nil {
		return Idle{}, err
	}
	defer drv.cmd.Process.Kill()
	if _, err := drv.next("BASE"); err != nil {
		return Idle{}, err
	}
	pid := drv.cmd.Process.Pid
	collect := func() error {
		if err := drv.send("gc"); err != nil {
			return err
		}
		_, err := drv.next("GC")
		return err
	}
	before, base, err := probeIdle(ctx, servers, pid, window, collect)
	if err != nil {
		return Idle{}, err
	}
	if err := drv.send("start"); err != nil {
		return Idle{}, err
	}
	if _, err := drv.next("STARTED"); err != nil {
		return Idle{}, err
	}
	if err := waitForNodes(ctx, servers, root, locks, perLock); err != nil {
		return Idle{}, err
	}
	after, cpu, err := probeIdle(ctx, servers, pid, window, collect)
	if err != nil {
		return Idle{}, err
	}
	_ = drv.send("stop")
	_ = drv.wait()
	return idleResult(p.name, locks*perLock, before, after, base, cpu), nil
}

func idleResult(impl string, n int, before, after idleProbe, base, cpu time.Duration) Idle {
	return Idle{
		Impl: impl, Waiters: n,
		RSS: after.rss - before.rss, HeapStack: after.heapStack - before.heapStack,
		Threads: after.threads - before.threads, Watches: after.watches - before.watches,
		CPU: cpu, Base: base,
	}
}

// settle waits until the servers' watches have not changed for two
// seconds (every waiter has set its watch), at most a minute.
func settle(ctx context.Context, servers []string) error {
	last, since := int64(-1), time.Now()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		n, err := mntrSum(servers, []string{"zk_watch_count"})
		if err != nil {
			return err
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= 2*time.Second {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil // still moving after a minute: measure it as it is
}

// probeIdle lets the waiters settle, collects the garbage of process pid
// (this process's itself, another's through collect), reads its memory
// and threads and the servers' watches, then its CPU over window, per
// second.
func probeIdle(ctx context.Context, servers []string, pid int, window time.Duration, collect func() error) (idleProbe, time.Duration, error) {
	self := pid == os.Getpid()
	if err := settle(ctx, servers); err != nil {
		return idleProbe{}, 0, err
	}
	var p idleProbe
	if collect != nil {
		if err := collect(); err != nil {
			return p, 0, err
		}
	}
	if self {
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		p.heapStack = int64(ms.HeapInuse + ms.StackInuse)
	}
	rss, threads, err := procStatus(pid)
	if err != nil {
		return p, 0, err
	}
	p.rss, p.threads = rss, threads
	if self {
		p.threads = runtime.NumGoroutine()
	}
	if p.watches, err = mntrSum(servers, []string{"zk_watch_count"}); err != nil {
		return p, 0, err
	}
	t0, err := procCPU(pid)
	if err != nil {
		return p, 0, err
	}
	start := time.Now()
	time.Sleep(window)
	t1, err := procCPU(pid)
	if err != nil {
		return p, 0, err
	}
	return p, time.Duration(float64(t1-t0) / time.Since(start).Seconds()), nil
}

// waitForNodes waits until the servers list every waiter's node.
func waitForNodes(ctx context.Context, servers []string, root string, locks, perLock int) error {
	p, err := openPlain(servers)
	if err != nil {
		return err
	}
	defer p.Close()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		n := 0
		for l := range locks {
			children, _, err := p.conn.Children(fmt.Sprintf("%s/lock-%d", root, l))
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			n += len(children)
		}
		if n == locks*(perLock+1) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("idle waiters: %d of %d nodes after 5 minutes", n, locks*(perLock+1))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// procStatus reads a process's resident memory and threads.
func procStatus(pid int) (rss int64, threads int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, _ := strings.Cut(line, ":")
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		switch name {
		case "VmRSS": // in kB
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return 0, 0, err
			}
			rss = kb << 10
		case "Threads":
			if threads, err = strconv.Atoi(fields[0]); err != nil {
				return 0, 0, err
			}
		}
	}
	return rss, threads, nil
}

// procCPU reads the CPU time a process has used: the sum of its threads'
// run time in nanoseconds (schedstat), or where the kernel keeps no
// schedstat, its user and system time in ticks of 10 ms (stat).
func procCPU(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread ended
		}
		fields := strings.Fields(string(b))
		if err != nil || len(fields) == 0 {
			return procTicks(pid)
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return procTicks(pid)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// procTicks reads a process's user and system time from stat, in the
// kernel's ticks of 10 ms.
func procTicks(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count after it.
	_, rest, ok := strings.Cut(string(b), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15 of stat(5)
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
