package bench

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The peers' drivers: the same scenarios, run by Curator 5.4 (Debian's
// libcurator-recipes-java) and Kazoo 2.8 (python3-kazoo).
//
//go:embed peers/CuratorBench.java peers/kazoo_bench.py peers/CuratorDiscoveryBench.java
var peerSources embed.FS

const (
	curatorJar = "/usr/share/java/curator-recipes.jar" // its manifest names the rest
	slf4jNop   = "/usr/share/java/slf4j-nop.jar"
	python     = "/usr/bin/python3" // Debian's, where python3-kazoo is
)

// peer runs one peer's driver as a child process.
type peer struct {
	name    string
	prepare func() ([]string, error) // the argv prefix of the driver

	once sync.Once
	argv []string
	err  error
}

func (p *peer) command() ([]string, error) {
	p.once.Do(func() { p.argv, p.err = p.prepare() })
	return p.argv, p.err
}

var (
	curatorPeer = &peer{name: "Curator", prepare: prepareCurator}
	kazooPeer   = &peer{name: "Kazoo", prepare: prepareKazoo}
)

// Peers returns Curator's InterProcessMutex and Kazoo's Lock.
func Peers() []Impl {
	return []Impl{
		{Name: "Curator", Exclusive: true, peer: curatorPeer},
		{Name: "Kazoo", Exclusive: true, peer: kazooPeer},
	}
}

// peerDir holds the drivers' sources and classes for this process.
var peerDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "zkrecipes-bench-peers-") })

// CleanupPeers removes the compiled drivers.
func CleanupPeers() {
	if dir, err := peerDir(); err == nil {
		os.RemoveAll(dir)
	}
}

func extract(name string) (string, error) {
	dir, err := peerDir()
	if err != nil {
		return "", err
	}
	b, err := peerSources.ReadFile("peers/" + name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, b, 0o644)
}

func prepareCurator() ([]string, error) {
	if _, err := os.Stat(curatorJar); err != nil {
		return nil, fmt.Errorf("no Curator jars (%v): apt-get install libcurator-recipes-java, or run make bench", err)
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, errors.New("no javac to build the Curator driver: apt-get install default-jdk-headless")
	}
	src, err := extract("CuratorBench.java")
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(src)
	if out, err := exec.Command(javac, "-cp", curatorJar, "-d", dir, src).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("javac CuratorBench.java: %v\n%s", err, out)
	}
	cp := strings.Join([]string{dir, curatorJar, slf4jNop}, string(os.PathListSeparator))
	return []string{"java", "-Xss512k", "-cp", cp, "CuratorBench"}, nil
}

func prepareKazoo() ([]string, error) {
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		return nil, fmt.Errorf("no Kazoo for %s (%v): apt-get install python3-kazoo, or run make bench", python, err)
	}
	script, err := extract("kazoo_bench.py")
	if err != nil {
		return nil, err
	}
	return []string{python, script}, nil
}

// driver is a running peer driver.
type driver struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  *bufio.Scanner
	stderr *strings.Builder
	name   string
}

func (p *peer) start(ctx context.Context, servers []string, lockPath string, args ...string) (*driver, error) {
	argv, err := p.command()
	if err != nil {
		return nil, err
	}
	all := append(append(append([]string{}, argv[1:]...), strings.Join(servers, ","), lockPath), args...)
	cmd := exec.CommandContext(ctx, argv[0], all...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	d := &driver{cmd: cmd, in: in, lines: bufio.NewScanner(out), stderr: &strings.Builder{}, name: p.name}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return d, nil
}

// next returns the next line that starts with prefix, without it.
func (d *driver) next(prefix string) (string, error) {
	for d.lines.Scan() {
		if rest, ok := strings.CutPrefix(d.lines.Text(), prefix); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	d.cmd.Wait()
	return "", fmt.Errorf("%s driver ended before %q: %s", d.name, prefix, lastLines(d.stderr.String(), 15))
}

func (d *driver) send(line string) error {
	_, err := io.WriteString(d.in, line+"\n")
	return err
}

func (d *driver) wait() error {
	d.in.Close()
	if err := d.cmd.Wait(); err != nil {
		return fmt.Errorf("%s driver: %v: %s", d.name, err, lastLines(d.stderr.String(), 15))
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
