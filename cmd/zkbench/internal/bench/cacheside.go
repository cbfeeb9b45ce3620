package bench

// The implementations the cache scenarios drive: the zkrecipes cache in this
// process, and a peer's in its driver.

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

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

// newCacheSide starts impl: this process's cache, or a peer's driver.
func newCacheSide(ctx context.Context, impl string, servers []string) (cacheSide, error) {
	var (
		p    *peer
		kind string
	)
	switch impl {
	case CacheZK:
		return &localCache{}, nil
	case CacheZKRecursive:
		return &localCache{opts: []cache.Option{cache.WithRecursiveWatch()}}, nil
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
	opts    []cache.Option // the cache's
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
	c, err := cache.New(l.client, path, l.opts...)
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

func (l *localCache) pid() int { return os.Getpid() }

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
