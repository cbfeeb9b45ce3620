// Package peertest runs the real Curator (Java) and Kazoo (Python) as
// peers of the Go recipes in interop tests: each peer is a process steered
// line by line over stdin, answering on stdout. The drivers are Debian's
// libcurator-recipes-java and python3-kazoo, which make test installs.
package peertest

import (
	"bufio"
	_ "embed"
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

//go:embed CuratorDriver.java
var curatorDriver []byte

//go:embed kazoo_driver.py
var kazooDriver []byte

//go:embed CuratorDiscoveryDriver.java
var discoveryDriver []byte

// Debian's libcurator-discovery-java: curator-x-discovery, whose manifest
// names Jackson and the rest.
const discoveryJar = "/usr/share/java/curator-x-discovery.jar"

var (
	discoveryOnce sync.Once
	discoveryErr  error
)

// buildDiscovery compiles the discovery driver beside the others, once
// per test binary: only the discovery tests need curator-x-discovery.
func buildDiscovery(t testing.TB) string {
	t.Helper()
	dir := build(t)
	discoveryOnce.Do(func() {
		if _, err := os.Stat(discoveryJar); err != nil {
			discoveryErr = fmt.Errorf("curator-x-discovery is missing (%v): apt-get install libcurator-discovery-java, or run make test", err)
			return
		}
		src := filepath.Join(dir, "CuratorDiscoveryDriver.java")
		if discoveryErr = os.WriteFile(src, discoveryDriver, 0o644); discoveryErr != nil {
			return
		}
		cp := strings.Join([]string{discoveryJar, curatorJar}, string(os.PathListSeparator))
		if out, err := exec.Command("javac", "-cp", cp, "-d", dir, src).CombinedOutput(); err != nil {
			discoveryErr = fmt.Errorf("javac: %v\n%s", err, out)
		}
	})
	if discoveryErr != nil {
		t.Fatal(discoveryErr)
	}
	return dir
}

// CuratorDiscovery starts a Curator ServiceDiscovery on base; full says
// its JsonInstanceSerializer writes "enabled" (Curator's default, the
// compatible serializer, leaves it out). See the driver's commands.
func CuratorDiscovery(t testing.TB, connect, base string, full bool) *Peer {
	dir := buildDiscovery(t)
	mode := "compatible"
	if full {
		mode = "full"
	}
	cp := strings.Join([]string{dir, discoveryJar, curatorJar, slf4jNop}, string(os.PathListSeparator))
	return start(t, "curator discovery", "java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "CuratorDiscoveryDriver", connect, base, mode)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// build writes the drivers and compiles the Curator one, once per test
// binary.
func build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "zkrecipes-peers-"); buildErr != nil {
			return
		}
		src := filepath.Join(buildDir, "CuratorDriver.java")
		if buildErr = os.WriteFile(src, curatorDriver, 0o644); buildErr != nil {
			return
		}
		if buildErr = os.WriteFile(filepath.Join(buildDir, "kazoo_driver.py"), kazooDriver, 0o644); buildErr != nil {
			return
		}
		if _, err := os.Stat(curatorJar); err != nil {
			buildErr = fmt.Errorf("Curator is missing (%v): apt-get install libcurator-recipes-java, or run make test", err)
			return
		}
		javac, err := exec.LookPath("javac")
		if err != nil {
			buildErr = fmt.Errorf("no javac: apt-get install default-jdk-headless, or run make test")
			return
		}
		if out, err := exec.Command(javac, "-cp", curatorJar, "-d", buildDir, src).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("javac: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

// Cleanup removes the built drivers; call it from TestMain after the tests.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Peer is a Curator or Kazoo process steered over stdin and stdout.
type Peer struct {
	t     testing.TB
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	done  chan struct{}
}

// Curator starts a Curator lock on path: kind "mutex" (InterProcessMutex),
// "read" or "write" (a side of InterProcessReadWriteLock).
func Curator(t testing.TB, connect, path, kind string) *Peer {
	return curator(t, "curator "+kind, connect, path, kind)
}

// CuratorSemaphore starts a Curator InterProcessSemaphoreV2 of max leases
// on path; acquire takes one lease, release gives back the newest.
func CuratorSemaphore(t testing.TB, connect, path string, max int) *Peer {
	return curator(t, "curator semaphore", connect, path, "semaphore", fmt.Sprint(max))
}

// CuratorLatch starts a Curator LeaderLatch on path with participant id.
func CuratorLatch(t testing.TB, connect, path, id string) *Peer {
	return curator(t, "curator latch", connect, path, "latch", id)
}

// CuratorSelector starts a Curator LeaderSelector on path with participant
// id; its takeLeadership says LEADING and lasts until "resign".
func CuratorSelector(t testing.TB, connect, path, id string) *Peer {
	return curator(t, "curator selector", connect, path, "selector", id)
}

// CuratorCounter starts a Curator counter on path: kind "atomiclong"
// (DistributedAtomicLong, 8 bytes) or "sharedcount" (SharedCount, 4
// bytes, added to by a trySetCount loop). "add <delta> <n>" answers
// "ADDED <succeeded> <not succeeded> <failed>".
func CuratorCounter(t testing.TB, connect, path, kind string) *Peer {
	return curator(t, "curator "+kind, connect, path, kind)
}

// CuratorWriter starts a Curator client that writes as an application
// does, through Curator's fluent API: create (parents made as containers,
// protected names, TTL), set, delete; see the driver's writer commands.
func CuratorWriter(t testing.TB, connect string) *Peer {
	return curator(t, "curator writer", connect, "/", "writer")
}

// CuratorGroup starts a Curator GroupMember of the group at path, as
// member id with payload; "start" joins.
func CuratorGroup(t testing.TB, connect, path, id, payload string) *Peer {
	return curator(t, "curator group", connect, path, "group", id, payload)
}

// CuratorBarrier starts a Curator DistributedBarrier on path: "set",
// "remove" and "wait [timeoutMs]" answer RAISED, REMOVED, PASSED or
// TIMEOUT.
func CuratorBarrier(t testing.TB, connect, path string) *Peer {
	return curator(t, "curator barrier", connect, path, "barrier")
}

// CuratorDoubleBarrier starts one member of a Curator
// DistributedDoubleBarrier of members members on path: "enter
// [timeoutMs]" and "leave [timeoutMs]" answer ENTERED, LEFT or TIMEOUT,
// "session" SESSION <hex id>.
func CuratorDoubleBarrier(t testing.TB, connect, path string, members int) *Peer {
	return curator(t, "curator doublebarrier", connect, path, "doublebarrier", fmt.Sprint(members))
}

func curator(t testing.TB, name string, args ...string) *Peer {
	dir := build(t)
	cp := strings.Join([]string{dir, curatorJar, slf4jNop}, string(os.PathListSeparator))
	return start(t, name, append([]string{"java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "CuratorDriver"}, args...)...)
}

// Kazoo starts a Kazoo Lock on path (with extra_lock_patterns=["-lock-"]).
func Kazoo(t testing.TB, connect, path string) *Peer { return kazoo(t, connect, path, "lock") }

// KazooWriteLock starts a Kazoo WriteLock on path that also sees
// Curator-layout readers and writers (extra_lock_patterns=["__WRIT__",
// "__READ__"]).
func KazooWriteLock(t testing.TB, connect, path string) *Peer {
	return kazoo(t, connect, path, "write")
}

// KazooQueue starts a Kazoo LockingQueue on path.
func KazooQueue(t testing.TB, connect, path string) *Peer {
	return kazoo(t, connect, path, "queue")
}

// KazooCounter starts a Kazoo Counter on path: its text encoding, or
// with curator true support_curator=True (Curator's 4-byte count). "add
// <delta> <n>" answers "ADDED <succeeded> 0 <failed>".
func KazooCounter(t testing.TB, connect, path string, curator bool) *Peer {
	if curator {
		return kazoo(t, connect, path, "curatorcounter")
	}
	return kazoo(t, connect, path, "counter")
}

// KazooWriter starts a Kazoo client that writes as an application does:
// create (parents made with makepath), set, delete; see the driver's
// writer commands.
func KazooWriter(t testing.TB, connect string) *Peer { return kazoo(t, connect, "/", "writer") }

// KazooParty starts a Kazoo Party (shallow: a ShallowParty) at path as
// member id; "join" joins.
func KazooParty(t testing.TB, connect, path, id string, shallow bool) *Peer {
	kind := "party"
	if shallow {
		kind = "shallowparty"
	}
	return kazoo(t, connect, path, kind, id)
}

// KazooPartitioner starts a Kazoo SetPartitioner at path of items, as
// member id, with time_boundary boundary, run in Kazoo's documented loop:
// it says "STATE <name> [items]" at every change of state.
func KazooPartitioner(t testing.TB, connect, path, id string, items []string, boundary time.Duration) *Peer {
	return kazoo(t, connect, path, "partitioner", id, strings.Join(items, ","), fmt.Sprint(boundary.Seconds()))
}

// KazooBarrier starts a Kazoo Barrier on path: "set", "remove" and
// "wait [timeoutSeconds]" answer RAISED, REMOVED <bool>, PASSED or TIMEOUT.
func KazooBarrier(t testing.TB, connect, path string) *Peer {
	return kazoo(t, connect, path, "barrier")
}

// KazooDoubleBarrier starts one member of a Kazoo DoubleBarrier of members
// members on path: "enter" answers ENTERED <participating>, "leave" LEFT.
func KazooDoubleBarrier(t testing.TB, connect, path string, members int) *Peer {
	return kazoo(t, connect, path, "doublebarrier", fmt.Sprint(members))
}

func kazoo(t testing.TB, connect, path, kind string, args ...string) *Peer {
	dir := build(t)
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		t.Fatalf("Kazoo is missing for %s (%v): apt-get install python3-kazoo, or run make test", python, err)
	}
	return start(t, "kazoo "+kind, append([]string{python, filepath.Join(dir, "kazoo_driver.py"), connect, path, kind}, args...)...)
}

func start(t testing.TB, name string, argv ...string) *Peer {
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
	p := &Peer{t: t, name: name, cmd: cmd, in: in, lines: make(chan string, 100), done: make(chan struct{})}
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
	p.Expect("READY", 60*time.Second)
	return p
}

// Send writes one command line.
func (p *Peer) Send(format string, args ...any) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.in, format+"\n", args...); err != nil {
		p.t.Fatalf("%s: send: %v", p.name, err)
	}
}

// Do sends a command line and returns the rest of the answer, which must
// start with prefix.
func (p *Peer) Do(prefix, format string, args ...any) string {
	p.t.Helper()
	p.Send(format, args...)
	return p.Expect(prefix, 30*time.Second)
}

// Expect returns the rest of the next line, which must start with prefix.
func (p *Peer) Expect(prefix string, timeout time.Duration) string {
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

// Quiet asserts that the peer says nothing for d.
func (p *Peer) Quiet(d time.Duration) {
	p.t.Helper()
	select {
	case line := <-p.lines:
		p.t.Fatalf("%s said %q, want silence (still waiting)", p.name, line)
	case <-time.After(d):
	}
}

// Ask sends one command line and returns the next line the peer says,
// without failing the test: for a goroutine, which must not call Fatal.
func (p *Peer) Ask(timeout time.Duration, format string, args ...any) (string, error) {
	if _, err := fmt.Fprintf(p.in, format+"\n", args...); err != nil {
		return "", fmt.Errorf("%s: send: %w", p.name, err)
	}
	select {
	case line, ok := <-p.lines:
		if !ok {
			return "", fmt.Errorf("%s exited", p.name)
		}
		return line, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("%s: no answer within %v", p.name, timeout)
	}
}

// Kill ends the peer's process at once (SIGKILL), as a crash would: its
// session stays on the server until it expires.
func (p *Peer) Kill() {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		p.t.Fatalf("%s: kill: %v", p.name, err)
	}
}
