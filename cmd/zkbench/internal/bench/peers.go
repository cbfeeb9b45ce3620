package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peers"
)

// peer is a peer library's benchmark driver: the same scenarios, run by
// Curator 5.4 (Debian's libcurator-recipes-java) and Kazoo 2.8
// (python3-kazoo), from internal/testinfra/peers.
type peer struct {
	name   string
	driver *peers.Driver
}

var (
	curatorPeer = &peer{name: "Curator", driver: peers.CuratorBench}
	kazooPeer   = &peer{name: "Kazoo", driver: peers.KazooBench}
)

// peersNamed returns the implementations a run interleaves, zkrecipes
// then the peers named ("Curator", "Kazoo"), and those peers by name.
func peersNamed(names []string) (impls []string, byName map[string]*peer, err error) {
	impls, byName = []string{"zkrecipes"}, map[string]*peer{}
	for _, p := range names {
		switch p {
		case "Curator":
			byName[p] = curatorPeer
		case "Kazoo":
			byName[p] = kazooPeer
		default:
			return nil, nil, fmt.Errorf("bench: no peer %q", p)
		}
		impls = append(impls, p)
	}
	return impls, byName, nil
}

// Peers returns Curator's InterProcessMutex and Kazoo's Lock.
func Peers() []Impl {
	return []Impl{
		{Name: "Curator", Exclusive: true, peer: curatorPeer},
		{Name: "Kazoo", Exclusive: true, peer: kazooPeer},
	}
}

// CleanupPeers removes the compiled drivers.
func CleanupPeers() { peers.Cleanup() }

// driver is a running peer driver.
type driver struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
	proc  *peers.Process
	name  string
}

func (p *peer) start(ctx context.Context, servers []string, lockPath string, args ...string) (*driver, error) {
	proc, err := p.driver.Start(ctx, append([]string{strings.Join(servers, ","), lockPath}, args...)...)
	if err != nil {
		return nil, err
	}
	return &driver{cmd: proc.Cmd, in: proc.Stdin, lines: bufio.NewScanner(proc.Stdout), proc: proc, name: p.name}, nil
}

// next returns the next line that starts with prefix, without it.
func (d *driver) next(prefix string) (string, error) {
	for d.lines.Scan() {
		if rest, ok := strings.CutPrefix(d.lines.Text(), prefix); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	d.cmd.Wait()
	return "", fmt.Errorf("%s driver ended before %q: %s", d.name, prefix, lastLines(d.proc.Stderr(), 15))
}

func (d *driver) send(line string) error {
	_, err := io.WriteString(d.in, line+"\n")
	return err
}

func (d *driver) wait() error {
	d.in.Close()
	if err := d.cmd.Wait(); err != nil {
		return fmt.Errorf("%s driver: %v: %s", d.name, err, lastLines(d.proc.Stderr(), 15))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// latencies runs a scenario that prints RESULT <p50 ns> <p99 ns>.
func (p *peer) latencies(ctx context.Context, servers []string, lockPath, scenario string, iterations int) (p50, p99 time.Duration, err error) {
	a, b, err := p.result(ctx, servers, lockPath, scenario, iterations)
	return time.Duration(a), time.Duration(b), err
}

// contended runs n participants in the driver and counts the handoffs in
// a window of length d, as RunContended does.
func (p *peer) contended(ctx context.Context, servers []string, lockPath string, n int, d time.Duration) (Contended, error) {
	return p.contendedWith(ctx, servers, lockPath, n, d, "contended", strconv.Itoa(n))
}

// contendedWith is contended with the driver's scenario and arguments
// given: one that prints READY, answers mark and ends on stop.
func (p *peer) contendedWith(ctx context.Context, servers []string, lockPath string, n int, d time.Duration, args ...string) (Contended, error) {
	drv, err := p.start(ctx, servers, lockPath, args...)
	if err != nil {
		return Contended{}, err
	}
	defer drv.cmd.Process.Kill()
	if _, err := drv.next("READY"); err != nil {
		return Contended{}, err
	}
	time.Sleep(min(d/2, 2*time.Second))
	w, err := drv.window(servers, d, watchTriggers)
	if err != nil {
		return Contended{}, err
	}
	if err := drv.send("stop"); err != nil {
		return Contended{}, err
	}
	if err := drv.wait(); err != nil {
		return Contended{}, err
	}
	return Contended{Impl: p.name, Participants: n, Handoffs: w.count, Elapsed: w.elapsed, WakeUps: w.server}, nil
}

// measured is what a window of time counted: the servers' counter, the
// implementation's own count, and how long it was.
type measured struct {
	server, count int64
	elapsed       time.Duration
}

// window measures a window of length d of a driver that answers "mark"
// with MARK <its count>: the servers' counter, then the driver's count,
// at each end, in the same order, so that both count the same stretch of
// time.
func (d *driver) window(servers []string, length time.Duration, counter func([]string) (int64, error)) (measured, error) {
	mark := func() (server, count int64, err error) {
		if server, err = counter(servers); err != nil {
			return 0, 0, err
		}
		if err := d.send("mark"); err != nil {
			return 0, 0, err
		}
		s, err := d.next("MARK")
		if err != nil {
			return 0, 0, err
		}
		count, err = strconv.ParseInt(s, 10, 64)
		return server, count, err
	}
	s0, c0, err := mark()
	if err != nil {
		return measured{}, err
	}
	start := time.Now()
	time.Sleep(length)
	s1, c1, err := mark()
	if err != nil {
		return measured{}, err
	}
	return measured{server: s1 - s0, count: c1 - c0, elapsed: time.Since(start)}, nil
}

// localWindow is window for an implementation in this process, whose
// count is count().
func localWindow(ctx context.Context, servers []string, length time.Duration, counter func([]string) (int64, error), count func() int64) (measured, error) {
	s0, err0 := counter(servers)
	c0 := count()
	start := time.Now()
	select {
	case <-time.After(length):
	case <-ctx.Done():
	}
	s1, err1 := counter(servers)
	c1 := count()
	if err := errors.Join(err0, err1, ctx.Err()); err != nil {
		return measured{}, err
	}
	return measured{server: s1 - s0, count: c1 - c0, elapsed: time.Since(start)}, nil
}
