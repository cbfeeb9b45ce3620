// Package seqserver runs a standalone ZooKeeper server whose znodes'
// sequence counters a test can set, so that a directory's sequential
// children reach the end of the counter's range without 2^31 creates.
//
// ZooKeeper appends the parent's counter of child creations to the name
// of a sequential child ("%010d"), and raises it by one per create. The
// server here is the local install's own ZooKeeperServer class, run in a
// JVM by a small program (CounterServer.java, compiled by java itself
// when it starts) that sets the counter with the server's
// DataTree.setCversionPzxid on request.
package seqserver

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

//go:embed CounterServer.java
var program []byte

// tick is the server's tickTime: sessions may last 2 to 20 ticks.
const tick = 2 * time.Second

// Server is one standalone server in a JVM of its own, steered over its
// standard input.
type Server struct {
	addr  string
	log   string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string // the program's answers; closed when it exits
}

// Start starts a server for t and stops it when t ends. It skips t in
// -short mode, and fails t, saying how to install one, when there is no
// local ZooKeeper install.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("seqserver: integration test skipped in -short mode")
	}
	java, classpath, err := zkserver.Java()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "CounterServer.java")
	if err := os.WriteFile(src, program, 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{log: filepath.Join(dir, "server.log"), lines: make(chan string, 1)}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close() // the child has its own descriptor
	s.cmd = exec.Command(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.forceSync=no", "-Dzookeeper.admin.enableServer=false",
		"-cp", strings.Join(classpath, string(os.PathListSeparator)),
		src, data, strconv.Itoa(int(tick.Milliseconds())))
	s.cmd.Stderr = logf
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("seqserver: %v", err)
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(s.stop)
	line, err := s.next(time.Minute, "serving ")
	if err != nil {
		t.Fatalf("seqserver: the server did not start: %v\n%s", err, s.logTail())
	}
	s.addr = "127.0.0.1:" + strings.TrimPrefix(line, "serving ")
	return s
}

// Servers returns the server's address, for connection.Open.
func (s *Server) Servers() []string { return []string{s.addr} }

// SetCounter raises the sequence counter of the node at path (a server
// path: with the client's namespace, if any) to n: its next sequential
// child is named with n. It never lowers the counter, and is meant for a
// node with no change in flight, before its children are made.
func (s *Server) SetCounter(t testing.TB, path string, n int32) {
	t.Helper()
	if got := s.ask(t, fmt.Sprintf("set %s %d", path, n)); got != n {
		t.Fatalf("seqserver: the counter of %s is %d, not %d", path, got, n)
	}
}

// Counter returns the sequence counter of the node at path: the number
// the server gives its next sequential child, as long as no create is in
// flight.
func (s *Server) Counter(t testing.TB, path string) int32 {
	t.Helper()
	return s.ask(t, "get "+path)
}

func (s *Server) ask(t testing.TB, cmd string) int32 {
	t.Helper()
	if strings.ContainsAny(cmd, "\n\r") {
		t.Fatalf("seqserver: bad command %q", cmd)
	}
	if _, err := fmt.Fprintln(s.in, cmd); err != nil {
		t.Fatalf("seqserver: %s: %v", cmd, err)
	}
	line, err := s.next(30*time.Second, "ok ", "error ")
	if err != nil {
		t.Fatalf("seqserver: %s: %v\n%s", cmd, err, s.logTail())
	}
	v, ok := strings.CutPrefix(line, "ok ")
	n, perr := strconv.ParseInt(v, 10, 32)
	if !ok || perr != nil {
		t.Fatalf("seqserver: %s: %s", cmd, line)
	}
	return int32(n)
}

// next returns the program's next line that starts with one of prefixes,
// passing over others (a server logging to its standard output).
func (s *Server) next(timeout time.Duration, prefixes ...string) (string, error) {
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return "", fmt.Errorf("the server exited")
			}
			for _, p := range prefixes {
				if strings.HasPrefix(line, p) {
					return line, nil
				}
			}
		case <-deadline:
			return "", fmt.Errorf("no answer in %v", timeout)
		}
	}
}

// stop closes the program's input, on which it shuts the server down, and
// waits for it to exit (killing it after a while).
func (s *Server) stop() {
	s.in.Close()
	exited := make(chan struct{})
	go func() {
		for range s.lines {
		}
		_ = s.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}
