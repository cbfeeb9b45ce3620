package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestContendedWire runs the contended scenario for the named
// implementations (ZKRECIPES_WIRE_IMPLS, default mutex and zk.Lock),
// interleaved, for ZKRECIPES_WIRE rounds (it is skipped without), with 10
// and 100 participants (ZKRECIPES_WIRE_N), and prints per handoff what the
// servers counted — packets received (requests; a session's pings too)
// and sent (replies and notifications), watch notifications — and the CPU
// time the three servers and this process spent (utime+stime, 10 ms
// ticks). On a small machine shared by the ensemble and the clients, the
// handoff rate is about the CPU there is divided by the CPU a handoff
// costs, and that is mostly the packets.
//
//	ZKRECIPES_WIRE=5 go test -count=1 -run TestContendedWire ./cmd/zkbench/internal/bench/
func TestContendedWire(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("ZKRECIPES_WIRE"))
	if rounds == 0 {
		t.Skip("ZKRECIPES_WIRE not set")
	}
	ns := []int{10, 100}
	if s := os.Getenv("ZKRECIPES_WIRE_N"); s != "" {
		ns = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ns = append(ns, n)
		}
	}
	names := []string{"mutex", "zk.Lock"}
	if s := os.Getenv("ZKRECIPES_WIRE_IMPLS"); s != "" {
		names = strings.Split(s, ",")
	}
	impls, err := ByName(names...)
	if err != nil {
		t.Fatal(err)
	}
	ens := shared.Ensemble(t)
	servers := ens.Servers()
	pids := serverPIDs(t, servers)
	for r := range rounds {
		for _, n := range ns {
			for _, impl := range impls {
				var ends [][5]int64
				counter := func(s []string) (int64, error) {
					var v [5]int64
					var err error
					if v[0], err = mntrSum(s, []string{"zk_packets_received"}); err != nil {
						return 0, err
					}
					if v[1], err = mntrSum(s, []string{"zk_packets_sent"}); err != nil {
						return 0, err
					}
					if v[2], err = watchTriggers(s); err != nil {
						return 0, err
					}
					v[3], v[4] = cpuTicks(pids), cpuTicks([]int{os.Getpid()})
					ends = append(ends, v)
					return 0, nil
				}
				lock := fmt.Sprintf("/wire-%d-%d-%d", r, n, time.Now().UnixNano())
				res, err := runContendedCounting(context.Background(), impl, servers, lock, n, 3*time.Second, counter)
				if err != nil {
					t.Fatal(err)
				}
				h := float64(res.Handoffs)
				per := func(i int) float64 { return float64(ends[1][i]-ends[0][i]) / h }
				fmt.Printf("round %d n=%3d %-8s %7.1f handoffs/s  received/h %.2f  sent/h %.2f  notifications/h %.2f  server CPU/h %4.0fµs  client CPU/h %4.0fµs\n",
					r, n, impl.Name, res.PerSecond(), per(0), per(1), per(2), per(3)*1e4, per(4)*1e4)
			}
		}
	}
}

// runContendedCounting is RunContended for an implementation in this
// process, with counter read at both ends of the window.
func runContendedCounting(ctx context.Context, impl Impl, servers []string, lockPath string, n int, d time.Duration, counter func([]string) (int64, error)) (Contended, error) {
	ps := make([]Participant, 0, n)
	defer func() {
		for _, p := range ps {
			p.Close()
		}
	}()
	for i := range n {
		p, err := impl.New(ctx, pin(servers, i), lockPath)
		if err != nil {
			return Contended{}, err
		}
		ps = append(ps, p)
	}
	locks := make([]lockUnlock, len(ps))
	for i, p := range ps {
		locks[i] = p
	}
	var (
		handoffs, begun atomic.Int64
		stop            = make(chan struct{})
		wg              sync.WaitGroup
		errOnce         sync.Once
		firstErr        error
	)
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			begun.Add(1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := l.Lock(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				handoffs.Add(1)
				if err := l.Unlock(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	for begun.Load() < int64(len(locks)) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(min(d/2, 2*time.Second))
	w, err := localWindow(ctx, servers, d, counter, handoffs.Load)
	close(stop)
	wg.Wait()
	if firstErr != nil {
		return Contended{}, firstErr
	}
	if err != nil {
		return Contended{}, err
	}
	return Contended{Impl: impl.Name, Participants: n, Handoffs: w.count, Elapsed: w.elapsed}, nil
}

// TestHandoffFloor measures the handoff p50 of the mutex and zk.Lock
// beside the floor, interleaved, for ZKRECIPES_WIRE rounds.
func TestHandoffFloor(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("ZKRECIPES_WIRE"))
	if rounds == 0 {
		t.Skip("ZKRECIPES_WIRE not set")
	}
	impls, err := ByName("mutex", "zk.Lock")
	if err != nil {
		t.Fatal(err)
	}
	ens := shared.Ensemble(t)
	ctx := context.Background()
	for r := range rounds {
		f, err := RunFloor(ctx, ens.Servers(), fmt.Sprintf("/floor-%d-%d", r, time.Now().UnixNano()), 200)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("round %d floor %v", r, f.P50)
		for _, impl := range impls {
			h, err := RunHandoff(ctx, impl, ens.Servers(), fmt.Sprintf("/handoff-%d-%d", r, time.Now().UnixNano()), 200)
			if err != nil {
				t.Fatal(err)
			}
			line += fmt.Sprintf("  %s %v (%.2f× floor)", impl.Name, h.P50, float64(h.P50)/float64(f.P50))
		}
		fmt.Println(line)
	}
}

// serverPIDs finds the processes listening on the servers' client ports.
func serverPIDs(t *testing.T, servers []string) []int {
	out, err := exec.Command("ss", "-ltnpH").Output()
	if err != nil {
		t.Skipf("ss: %v", err)
	}
	var pids []int
	for _, s := range servers {
		_, port, _ := strings.Cut(s, ":")
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, ":"+port+" ") {
				_, rest, _ := strings.Cut(line, "pid=")
				pid, err := strconv.Atoi(strings.Split(rest, ",")[0])
				if err == nil {
					pids = append(pids, pid)
				}
			}
		}
	}
	if len(pids) != len(servers) {
		t.Skipf("server processes %v for %v", pids, servers)
	}
	return pids
}

// cpuTicks sums the utime and stime (10 ms ticks) of the processes.
func cpuTicks(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += u + st
	}
	return total
}

// TestContendedPaired compares the mutex with zk.Lock on a machine whose
// load changes from second to second: both sets of participants (n each,
// a session each) are made once, and short windows of each run in turn,
// ZKRECIPES_WIRE pairs of them; it prints the ratio of each adjacent pair
// and their median and quartiles, and the totals of CPU per handoff.
func TestContendedPaired(t *testing.T) {
	pairs, _ := strconv.Atoi(os.Getenv("ZKRECIPES_WIRE"))
	if pairs == 0 {
		t.Skip("ZKRECIPES_WIRE not set")
	}
	ns := []int{10, 100}
	if s := os.Getenv("ZKRECIPES_WIRE_N"); s != "" {
		ns = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ns = append(ns, n)
		}
	}
	impls, err := ByName("mutex", "zk.Lock")
	if err != nil {
		t.Fatal(err)
	}
	ens := shared.Ensemble(t)
	servers := ens.Servers()
	pids := serverPIDs(t, servers)
	ctx := context.Background()
	for _, n := range ns {
		sets := make([][]lockUnlock, len(impls))
		for k, impl := range impls {
			lock := fmt.Sprintf("/paired-%s-%d-%d", strings.ReplaceAll(impl.Name, ".", ""), n, time.Now().UnixNano())
			for i := range n {
				p, err := impl.New(ctx, pin(servers, i), lock)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				sets[k] = append(sets[k], p)
			}
		}
		var ratios []float64
		var count [2]int64
		var cpu [2]int64
		for range pairs {
			var rate [2]float64
			for k := range impls {
				c0 := cpuTicks(pids) + cpuTicks([]int{os.Getpid()})
				h, el, err := window(ctx, sets[k], 500*time.Millisecond, pairWindow)
				if err != nil {
					t.Fatal(err)
				}
				cpu[k] += cpuTicks(pids) + cpuTicks([]int{os.Getpid()}) - c0
				count[k] += h
				rate[k] = float64(h) / el.Seconds()
			}
			ratios = append(ratios, rate[0]/rate[1])
		}
		slices.Sort(ratios)
		q := func(f float64) float64 { return ratios[int(f*float64(len(ratios)-1)+0.5)] }
		fmt.Printf("n=%3d mutex ÷ zk.Lock, %d pairs of %v windows: median %.2f (quartiles %.2f–%.2f, range %.2f–%.2f); CPU per handoff (windows and refills, servers+client): mutex %.0fµs, zk.Lock %.0fµs\n",
			n, len(ratios), pairWindow, q(0.5), q(0.25), q(0.75), ratios[0], ratios[len(ratios)-1],
			float64(cpu[0])*1e4/float64(count[0]), float64(cpu[1])*1e4/float64(count[1]))
	}
}

// window runs every lock in a loop of Lock and Unlock for fill and then
// counts the handoffs for d; it stops the loops before it returns.
func window(ctx context.Context, locks []lockUnlock, fill, d time.Duration) (int64, time.Duration, error) {
	var (
		handoffs atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := l.Lock(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				handoffs.Add(1)
				if err := l.Unlock(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	time.Sleep(fill)
	h0, start := handoffs.Load(), time.Now()
	time.Sleep(d)
	h1, el := handoffs.Load(), time.Since(start)
	close(stop)
	wg.Wait()
	return h1 - h0, el, firstErr
}

// pairWindow is the length of each window of TestContendedPaired.
const pairWindow = 3 * time.Second
