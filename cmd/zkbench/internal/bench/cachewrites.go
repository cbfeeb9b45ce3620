package bench

// Writes at full speed while a cache follows them, and what a cache's
// reconnect costs in packets.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

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
