package bench

// The first full view of a tree: a cache's, and the same reads by a bare
// go-zookeeper session.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// viewCost is one first view and what it cost.
type viewCost struct {
	elapsed            time.Duration
	nodes              int
	heap, rss, watches int64
	// serverHeap is what the caches' server's Java heap gained (after a
	// full collection, before and after the load); serverHeapOK says it
	// was measured (a local server, jcmd there).
	serverHeap   int64
	serverHeapOK bool
}

// firstView loads a cache of tree in a fresh session on one, and measures
// the time to the first full view, the memory it added (heap after a
// collection, and the process's RSS), the watches the servers hold for
// it, and what its server's Java heap gained.
func firstView(ctx context.Context, s cacheSide, one, servers []string, tree string, measureServerHeap bool) (viewCost, error) {
	heap0, err := s.connect(ctx, one)
	if err != nil {
		return viewCost{}, err
	}
	ok := false
	defer func() {
		if !ok {
			s.unload()
		}
	}()
	rss0, _, err := procStatus(s.pid())
	if err != nil {
		return viewCost{}, err
	}
	w0, err := mntrSum(servers, []string{"zk_watch_count"})
	if err != nil {
		return viewCost{}, err
	}
	var sh0 int64
	sh0OK := false
	if measureServerHeap {
		sh0, sh0OK = serverHeap(one[0])
	}
	l, err := s.load(ctx, tree)
	if err != nil {
		return viewCost{}, err
	}
	rss1, _, err := procStatus(s.pid())
	if err != nil {
		return viewCost{}, err
	}
	w1, err := mntrSum(servers, []string{"zk_watch_count"})
	if err != nil {
		return viewCost{}, err
	}
	v := viewCost{elapsed: l.elapsed, nodes: l.nodes, rss: rss1 - rss0, watches: w1 - w0}
	if sh0OK {
		if sh1, ok := serverHeap(one[0]); ok {
			v.serverHeap, v.serverHeapOK = sh1-sh0, true
		}
	}
	if l.heap > 0 {
		v.heap = l.heap - heap0
	}
	ok = true
	return v, s.unload()
}

// rawFirstView makes the reads of a cache's first load of tree, and keeps
// nothing: a plain go-zookeeper session on one, inflight goroutines, GetW
// and ChildrenW of every node, the children found by the listings. The
// floor of a first view with one-shot watches.
func rawFirstView(one []string, tree string, nodes, inflight int) (time.Duration, error) {
	p, err := openPlain(one)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	var (
		work        = make(chan string, nodes+1) // every node is queued once
		outstanding atomic.Int64
		done        = make(chan struct{})
		once        sync.Once
		firstErr    error
		wg          sync.WaitGroup
	)
	finish := func(err error) {
		once.Do(func() { firstErr = err; close(done) })
	}
	start := time.Now()
	outstanding.Store(1)
	work <- tree
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case path := <-work:
					if _, _, _, err := p.conn.GetW(path); err != nil {
						finish(err)
						return
					}
					kids, _, _, err := p.conn.ChildrenW(path)
					if err != nil {
						finish(err)
						return
					}
					if int(outstanding.Add(int64(len(kids)))) > nodes+1 {
						finish(fmt.Errorf("bench: more than %d nodes under %s", nodes, tree))
						return
					}
					for _, k := range kids {
						work <- path + "/" + k
					}
					if outstanding.Add(-1) == 0 {
						finish(nil)
						return
					}
				}
			}
		}()
	}
	<-done
	elapsed := time.Since(start)
	wg.Wait()
	return elapsed, firstErr
}

// serversCPU returns the CPU time the ZooKeeper servers that are this
// process's children (a local ensemble) have used, and false if there are
// none.
func serversCPU() (time.Duration, bool) {
	var sum time.Duration
	found := false
	for pid := range localServers() {
		cpu, err := procCPU(pid)
		if err != nil {
			continue
		}
		sum, found = sum+cpu, true
	}
	return sum, found
}

// localServers returns the process ids of the ZooKeeper servers that are
// this process's children (a local ensemble), with their command lines'
// arguments.
func localServers() map[int][]string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	me := strconv.Itoa(os.Getpid())
	out := map[int][]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(stat), ") ")
		if f := strings.Fields(rest); len(f) < 2 || f[1] != me {
			continue // not a child of this process
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmd), "QuorumPeerMain") {
			continue
		}
		out[pid] = strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	}
	return out
}
