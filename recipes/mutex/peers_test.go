package mutex_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Debian's packages: libcurator-recipes-java (its manifest names the
// rest of the class path) and python3-kazoo, for /usr/bin/python3.
const (
	curatorJar = "/usr/share/java/curator-recipes.jar"
	slf4jNop   = "/usr/share/java/slf4j-nop.jar"
	python     = "/usr/bin/python3"
)

var (
	curatorOnce sync.Once
	curatorDir  string
	curatorErr  error
)

// buildCurator compiles the Curator driver once per test binary.
func buildCurator(t *testing.T) string {
	t.Helper()
	curatorOnce.Do(func() {
		if _, err := os.Stat(curatorJar); err != nil {
			curatorErr = fmt.Errorf("Curator is missing (%v): apt-get install libcurator-recipes-java, or run make test", err)
			return
		}
		javac, err := exec.LookPath("javac")
		if err != nil {
			curatorErr = fmt.Errorf("no javac: apt-get install default-jdk-headless, or run make test")
			return
		}
		curatorDir, curatorErr = os.MkdirTemp("", "curator-driver-")
		if curatorErr != nil {
			return
		}
		out, err := exec.Command(javac, "-cp", curatorJar, "-d", curatorDir, "testdata/CuratorDriver.java").CombinedOutput()
		if err != nil {
			curatorErr = fmt.Errorf("javac: %v\n%s", err, out)
		}
	})
	if curatorErr != nil {
		t.Fatal(curatorErr)
	}
	return curatorDir
}

func removeCuratorDriver() {
	if curatorDir != "" {
		os.RemoveAll(curatorDir)
	}
}

// peer is a Curator or Kazoo process steered over stdin/stdout.
type peer struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	done  chan struct{}
}

func startCurator(t *testing.T, connect, lock string) *peer {
	dir := buildCurator(t)
	cp := strings.Join([]string{dir, curatorJar, slf4jNop}, string(os.PathListSeparator))
	return startPeer(t, "curator", "java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "CuratorDriver", connect, lock)
}

func startKazoo(t *testing.T, connect, lock string) *peer {
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		t.Fatalf("Kazoo is missing for %s (%v): apt-get install python3-kazoo, or run make test", python, err)
	}
	script, _ := filepath.Abs("testdata/kazoo_driver.py")
	return startPeer(t, "kazoo", python, script, connect, lock)
}

func startPeer(t *testing.T, name string, argv ...string) *peer {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &peer{t: t, name: name, cmd: cmd, in: in, lines: make(chan string, 100), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		fmt.Fprintln(p.in, "quit")
		p.in.Close()
		exited := make(chan error, 1)
		go func() { <-p.done; exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s stderr:\n%s", name, stderr.String())
		}
	})
	p.expect("READY", 60*time.Second)
	return p
}

func (p *peer) send(format string, args ...any) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.in, format+"\n", args...); err != nil {
		p.t.Fatalf("%s: send: %v", p.name, err)
	}
}

// expect returns the next line, which must start with prefix.
func (p *peer) expect(prefix string, timeout time.Duration) string {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("%s exited while %q was expected", p.name, prefix)
		}
		if !strings.HasPrefix(line, prefix) {
			p.t.Fatalf("%s said %q, want %q", p.name, line, prefix)
		}
		return strings.TrimSpace(strings.TrimPrefix(line, prefix))
	case <-time.After(timeout):
		p.t.Fatalf("%s: no %q within %v", p.name, prefix, timeout)
	}
	return ""
}

// quiet asserts that the peer says nothing for d.
func (p *peer) quiet(d time.Duration) {
	p.t.Helper()
	select {
	case line := <-p.lines:
		p.t.Fatalf("%s said %q, want silence (still waiting)", p.name, line)
	case <-time.After(d):
	}
}
