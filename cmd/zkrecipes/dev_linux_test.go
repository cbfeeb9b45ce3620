//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// devStopBound is how long dev may take from the signal to its exit with
// every server stopped: a graceful stop is well under a second a server,
// and the bound leaves room for a loaded machine, not for the 10s after
// which a server that ignores SIGTERM is killed.
const devStopBound = 8 * time.Second

// devRun is a zkrecipes dev process, in a process group of its own (as a
// shell's job is).
type devRun struct {
	cmd     *exec.Cmd
	servers []string // from its export line
	done    chan struct{}
	code    int

	mu     sync.Mutex
	stderr bytes.Buffer
}

func (d *devRun) errOut() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

// startDev starts zkrecipes dev with args and waits for its export line.
// The process group is killed when the test ends, if still running.
func startDev(t *testing.T, args ...string) *devRun {
	t.Helper()
	zktest.SkipIfShort(t) // it starts ZooKeeper servers
	// A test run in the background of a shell without job control starts
	// with SIGINT ignored, which its children would inherit: caught here,
	// it reaches them with its default action, as at a terminal.
	if signal.Ignored(syscall.SIGINT) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGINT)
	}
	d := &devRun{cmd: exec.Command(builtCLI.get(t), append([]string{"dev"}, args...)...), done: make(chan struct{})}
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := errPipe.Read(buf)
			d.mu.Lock()
			d.stderr.Write(buf[:n])
			d.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	lines := make(chan string, 4)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	go func() {
		<-copied
		for range lines { // stdout until it closes, before Wait closes the pipe
		}
		err := d.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			d.code = ee.ExitCode()
		case err != nil:
			d.code = -1
		}
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	})
	select {
	case line, ok := <-lines:
		value, found := strings.CutPrefix(line, "export ZK_SERVERS=")
		if !ok || !found {
			t.Fatalf("dev %v: stdout %q, not the export line; stderr:\n%s", args, line, d.errOut())
		}
		d.servers = strings.Split(value, ",")
	case <-time.After(2 * time.Minute):
		t.Fatalf("dev %v: no export line after 2m; stderr:\n%s", args, d.errOut())
	}
	return d
}

// stop sends sig to the process, or to its whole group (a terminal's
// Ctrl-C reaches every process of the foreground job), and waits up to
// devStopBound for its exit. It returns how long that took.
func (d *devRun) stop(t *testing.T, sig syscall.Signal, group bool) time.Duration {
	t.Helper()
	pid := d.cmd.Process.Pid
	if group {
		pid = -pid
	}
	start := time.Now()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(devStopBound):
		t.Fatalf("dev still running %v after %v; stderr:\n%s", devStopBound, sig, d.errOut())
	}
	took := time.Since(start)
	if d.code != 0 {
		t.Fatalf("dev exited %d after %v, want 0; stderr:\n%s", d.code, sig, d.errOut())
	}
	return took
}

// serversIn returns the pids of the processes whose command line names a
// file in dir: the servers, whose zoo.cfg is there (dev's own command line
// names dir alone).
func serversIn(dir string) []int {
	s := dir + string(filepath.Separator)
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
		if st, err := readProcStat(pid); err == nil && st.state == 'Z' {
			continue // ended, not yet reaped by whoever inherited it
		}
		pids = append(pids, pid)
	}
	return pids
}

// devDataDir is the directory dev's stderr names.
func devDataDir(t *testing.T, errOut string) string {
	t.Helper()
	_, rest, ok := strings.Cut(errOut, "ZooKeeper server")
	if ok {
		_, rest, ok = strings.Cut(rest, " in ")
	}
	dir, _, _ := strings.Cut(rest, " ")
	if !ok || !filepath.IsAbs(dir) {
		t.Fatalf("no data directory in dev's stderr:\n%s", errOut)
	}
	return strings.TrimSuffix(dir, "...")
}

// connectOnly opens a go-zookeeper session to the one server addr.
func connectOnly(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, err := zkserver.Connect([]string{addr}, 10*time.Second)
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestDevServesUntilCtrlC: dev with no flags prints a ZK_SERVERS a Go
// client creates a node on; a Ctrl-C (SIGINT to its process group, the
// servers included, as a terminal sends it) stops it within the bound,
// exit 0, saying so, with no server process left and its temporary
// directory removed.
func TestDevServesUntilCtrlC(t *testing.T) {
	d := startDev(t)
	if len(d.servers) != 1 {
		t.Fatalf("ZK_SERVERS %v, want one server", d.servers)
	}
	dir := devDataDir(t, d.errOut())
	servers := serversIn(dir)
	if len(servers) != 1 {
		t.Fatalf("%d processes name %s, want 1 server", len(servers), dir)
	}
	c := connectOnly(t, d.servers[0])
	if _, err := c.Create("/dev-test", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create on %s: %v", d.servers[0], err)
	}
	if data, _, err := c.Get("/dev-test"); err != nil || string(data) != "hello" {
		t.Fatalf("get: %q, %v", data, err)
	}
	c.Close()
	took := d.stop(t, syscall.SIGINT, true)
	t.Logf("Ctrl-C to exit: %v", took)
	if errOut := d.errOut(); !strings.Contains(errOut, "interrupted by SIGINT") || !strings.Contains(errOut, "stopped 1 ZooKeeper server in") {
		t.Fatalf("dev did not say it stopped the server:\n%s", errOut)
	}
	if left := serversIn(dir); len(left) > 0 {
		t.Fatalf("processes %v still name %s after dev exited", left, dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary directory %s after exit: %v, want it removed", dir, err)
	}
}

// TestDevDirKeepsDataAcrossRestarts: a node created on dev --dir D --port
// P is there after a SIGTERM (a supervisor's stop of dev alone) and a new
// dev on D, which serves on P again; a second dev on D while one runs is
// refused at once, without starting a server.
func TestDevDirKeepsDataAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "zk")
	port := freePort(t)
	d := startDev(t, "--dir", dir, "--port", strconv.Itoa(port))
	want := []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if strings.Join(d.servers, ",") != want[0] {
		t.Fatalf("ZK_SERVERS %v, want %v", d.servers, want)
	}
	c := connectOnly(t, d.servers[0])
	if _, err := c.Create("/kept", []byte("across restarts"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.Close()

	code, out, errOut := runCLI(t, "dev", "--dir", dir)
	if code != 1 || out != "" || !strings.Contains(errOut, "in use by another zkrecipes dev") {
		t.Fatalf("a second dev on %s: exit %d, stdout %q, stderr %q", dir, code, out, errOut)
	}
	if n := len(serversIn(dir)); n != 1 {
		t.Fatalf("%d processes name %s with the second dev refused, want the first's 1 server", n, dir)
	}

	took := d.stop(t, syscall.SIGTERM, false)
	t.Logf("SIGTERM to exit: %v", took)
	if left := serversIn(dir); len(left) > 0 {
		t.Fatalf("processes %v still name %s after dev exited", left, dir)
	}
	if !strings.Contains(d.errOut(), "data kept in "+dir) {
		t.Fatalf("dev did not say where the data are kept:\n%s", d.errOut())
	}

	again := startDev(t, "--dir", dir, "--port", strconv.Itoa(port))
	if strings.Join(again.servers, ",") != want[0] {
		t.Fatalf("restarted: ZK_SERVERS %v, want %v", again.servers, want)
	}
	if !strings.Contains(again.errOut(), "on the data it holds") {
		t.Fatalf("restarted dev did not say it reuses the data:\n%s", again.errOut())
	}
	c = connectOnly(t, again.servers[0])
	if data, _, err := c.Get("/kept"); err != nil || string(data) != "across restarts" {
		t.Fatalf("after the restart: %q, %v; want the node created before", data, err)
	}
	c.Close()
	again.stop(t, syscall.SIGTERM, false)
	if left := serversIn(dir); len(left) > 0 {
		t.Fatalf("processes %v still name %s after the second dev exited", left, dir)
	}
}

// TestDevThreeServersAllAnswer: with --servers 3, ZK_SERVERS names three
// servers, each of which a client on it alone can write and read through,
// one leading and two following; Ctrl-C stops all three.
func TestDevThreeServersAllAnswer(t *testing.T) {
	dir := t.TempDir()
	d := startDev(t, "--servers", "3", "--dir", dir)
	if len(d.servers) != 3 {
		t.Fatalf("ZK_SERVERS %v, want three servers", d.servers)
	}
	if n := len(serversIn(dir)); n != 3 {
		t.Fatalf("%d processes name %s, want 3 servers", n, dir)
	}
	modes := map[string]int{}
	for i, addr := range d.servers {
		mode, err := zkserver.ServerMode(addr, 5*time.Second)
		if err != nil {
			t.Fatalf("server %s: %v", addr, err)
		}
		modes[mode]++
		c := connectOnly(t, addr)
		p := fmt.Sprintf("/from-%d", i)
		if _, err := c.Create(p, []byte(addr), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create through %s: %v", addr, err)
		}
		c.Close()
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("server modes %v, want a leader and two followers", modes)
	}
	for _, addr := range d.servers {
		c := connectOnly(t, addr)
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for i := range d.servers {
			if data, _, err := c.Get(fmt.Sprintf("/from-%d", i)); err != nil || string(data) != d.servers[i] {
				t.Fatalf("read /from-%d through %s: %q, %v", i, addr, data, err)
			}
		}
		c.Close()
	}
	took := d.stop(t, syscall.SIGINT, true)
	t.Logf("Ctrl-C to exit, 3 servers: %v", took)
	if !strings.Contains(d.errOut(), "stopped 3 ZooKeeper servers in") {
		t.Fatalf("dev did not say it stopped the servers:\n%s", d.errOut())
	}
	if left := serversIn(dir); len(left) > 0 {
		t.Fatalf("processes %v still name %s after dev exited", left, dir)
	}
}

// TestDevLinkDelay: with --link-delay D on three servers, a read through
// the ZK_SERVERS printed takes at least 2D (the client's link, both ways)
// and a write at least 4D (a write also crosses the links between servers:
// the proposal and its acknowledgement, and from a follower the forward
// and the commit), so both kinds of link are delayed.
func TestDevLinkDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	d := startDev(t, "--servers", "3", "--link-delay", delay.String())
	c := connectOnly(t, d.servers[0])
	read, write := time.Hour, time.Hour
	for i := range 5 {
		start := time.Now()
		if _, _, err := c.Exists("/"); err != nil {
			t.Fatal(err)
		}
		read = min(read, time.Since(start))
		start = time.Now()
		if _, err := c.Create(fmt.Sprintf("/w%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		write = min(write, time.Since(start))
	}
	t.Logf("fastest at a %v delay: read %v, write %v", delay, read, write)
	if read < 2*delay || write < 4*delay {
		t.Fatalf("fastest read %v, write %v; want at least 2 × and 4 × %v", read, write, delay)
	}
	c.Close()
	d.stop(t, syscall.SIGTERM, false)
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
