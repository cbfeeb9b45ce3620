package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// ManyKeys is one client locking many different keys at once.
type ManyKeys struct {
	Impl       string
	Goroutines int
	Keys       int
	Cycles     int64 // Lock+Unlock cycles in the window
	Elapsed    time.Duration
	P50, P99   time.Duration
	Packets    int64 // packets the servers received in the window
}

// PerSecond is the cycle rate.
func (m ManyKeys) PerSecond() float64 { return float64(m.Cycles) / m.Elapsed.Seconds() }

// PacketsPerCycle is the requests each cycle cost on the wire (the
// session's pings included: a few per second).
func (m ManyKeys) PacketsPerCycle() float64 {
	if m.Cycles == 0 {
		return 0
	}
	return float64(m.Packets) / float64(m.Cycles)
}

// keyed is one client's way to take a lock on any key.
type keyed interface {
	cycle(ctx context.Context, path string) error
	Close()
}

// keyedImpls are the implementations of the many-keys scenario in this
// process: one connection each.
var keyedImpls = map[string]func(ctx context.Context, servers []string) (keyed, error){
	mutexOneWatch: func(ctx context.Context, servers []string) (keyed, error) {
		c, err := openClient(ctx, servers)
		return &keyedMutex{c: c, oneWatch: true}, err
	},
	"mutex": func(ctx context.Context, servers []string) (keyed, error) {
		c, err := openClient(ctx, servers)
		return &keyedMutex{c: c}, err
	},
	"zk.Lock": func(_ context.Context, servers []string) (keyed, error) {
		p, err := openPlain(servers)
		return &keyedZKLock{p}, err
	},
}

type keyedMutex struct {
	c        *connection.Client
	oneWatch bool // mutexOneWatch
}

// mutexOneWatch is the mutex with Curator's predicate: a waiter watches
// its predecessor alone and lists the directory when it goes, instead of
// also watching the predecessor's predecessor to hold without a request.
// The deep queue measures both, to choose between them.
const mutexOneWatch = "mutex, one watch"

// cycle makes a Mutex for the key, as a service locking per entity does.
func (k *keyedMutex) cycle(ctx context.Context, path string) error {
	m, err := mutex.New(k.c, path)
	if err != nil {
		return err
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	return m.Unlock(ctx)
}

func (k *keyedMutex) Close() { k.c.Close() }

type keyedZKLock struct{ *plain }

func (k *keyedZKLock) cycle(_ context.Context, path string) error {
	l := zk.NewLock(k.conn, path, zk.WorldACL(zk.PermAll))
	if err := l.Lock(); err != nil {
		return err
	}
	return l.Unlock()
}

// RunManyKeys runs goroutines that each take and release locks on keys
// drawn at random from keys paths under parent, all through one client on
// the first server, and measures a window of length d after a warm-up of
// d/2 (lock directories are created on first use, as a service's are).
func RunManyKeys(ctx context.Context, impl string, servers []string, parent string, goroutines, keys int, d time.Duration) (ManyKeys, error) {
	if p := peerNamed(impl); p != nil {
		return peerManyKeys(ctx, p, servers, parent, goroutines, keys, d)
	}
	open, ok := keyedImpls[impl]
	if !ok {
		return ManyKeys{}, fmt.Errorf("bench: no many-keys implementation %q", impl)
	}
	k, err := open(ctx, pin(servers, 0))
	if err != nil {
		return ManyKeys{}, err
	}
	defer k.Close()
	var (
		cycles    atomic.Int64
		measuring atomic.Bool
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		mu        sync.Mutex
		lat       []time.Duration
		errOnce   sync.Once
		firstErr  error
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			for {
				select {
				case <-stop:
					return
				default:
				}
				path := parent + "/key-" + strconv.Itoa(rng.IntN(keys))
				start := time.Now()
				if err := k.cycle(ctx, path); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("%s: %s: %w", impl, path, err) })
					return
				}
				if measuring.Load() {
					mine = append(mine, time.Since(start))
					cycles.Add(1)
				}
			}
		}()
	}
	time.Sleep(d / 2)
	p0, err0 := packetsReceived(servers)
	measuring.Store(true)
	start := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	p1, err1 := packetsReceived(servers)
	n := cycles.Load()
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	if firstErr != nil {
		return ManyKeys{}, firstErr
	}
	if err := errors.Join(err0, err1, ctx.Err()); err != nil {
		return ManyKeys{}, err
	}
	slices.Sort(lat)
	return ManyKeys{Impl: impl, Goroutines: goroutines, Keys: keys, Cycles: n, Elapsed: elapsed,
		P50: quantile(lat, 0.5), P99: quantile(lat, 0.99), Packets: p1 - p0}, nil
}

// peerNamed returns the driver of peer impl, or nil.
func peerNamed(impl string) *peer {
	for _, p := range []*peer{curatorPeer, kazooPeer} {
		if p.name == impl {
			return p
		}
	}
	return nil
}

// peerManyKeys runs the scenario in a peer's driver: one client (a
// CuratorFramework, a KazooClient), a lock per key, one thread per
// goroutine.
func peerManyKeys(ctx context.Context, p *peer, servers []string, parent string, threads, keys int, d time.Duration) (ManyKeys, error) {
	drv, err := p.start(ctx, pin(servers, 0), parent, "manykeys", strconv.Itoa(threads), strconv.Itoa(keys))
	if err != nil {
		return ManyKeys{}, err
	}
	defer drv.cmd.Process.Kill()
	if _, err := drv.next("READY"); err != nil {
		return ManyKeys{}, err
	}
	time.Sleep(d / 2)
	w, err := drv.window(servers, d, packetsReceived)
	if err != nil {
		return ManyKeys{}, err
	}
	if err := drv.send("stop"); err != nil {
		return ManyKeys{}, err
	}
	res, err := drv.next("RESULT")
	if err != nil {
		return ManyKeys{}, err
	}
	var p50, p99 int64
	if _, err := fmt.Sscanf(res, "%d %d", &p50, &p99); err != nil {
		return ManyKeys{}, fmt.Errorf("%s driver said %q: %w", p.name, res, err)
	}
	if err := drv.wait(); err != nil {
		return ManyKeys{}, err
	}
	return ManyKeys{Impl: p.name, Goroutines: threads, Keys: keys, Cycles: w.count, Elapsed: w.elapsed,
		P50: time.Duration(p50), P99: time.Duration(p99), Packets: w.server}, nil
}

// locker makes a lock value on path through the client.
func (k *keyedMutex) locker(path string) (lockUnlock, error) {
	if !k.oneWatch {
		return mutex.New(k.c, path)
	}
	core := &lockcore.Lock{Client: k.c, Dir: path, Name: "lock-", Data: k.c.DefaultData(),
		Accept: layout.MutexKinds, Predicate: lockcore.Predecessor, Window: 1}
	return holderLock{lockcore.NewHolder(k.c, lockcore.HolderConfig{
		Name: "mutex", Path: path, Acquire: core.Acquire, Release: core.Release,
		ErrLocked: mutex.ErrLocked, ErrNotLocked: mutex.ErrNotLocked, ErrLockLost: mutex.ErrLockLost,
	})}, nil
}

func (k *keyedZKLock) locker(path string) (lockUnlock, error) {
	return &zkLock{plain: k.plain, l: zk.NewLock(k.conn, path, zk.WorldACL(zk.PermAll))}, nil
}
