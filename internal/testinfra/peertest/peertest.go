// Package peertest runs the real Curator (Java) and Kazoo (Python) as
// peers of the Go recipes in interop tests: each peer is one of the
// interop drivers of internal/testinfra/peers, steered line by line over
// stdin, answering on stdout, and stopped when its test ends.
package peertest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peers"
)

// CuratorDiscovery starts a Curator ServiceDiscovery on base; full says
// its JsonInstanceSerializer writes "enabled" (Curator's default, the
// compatible serializer, leaves it out). See the driver's commands.
func CuratorDiscovery(t testing.TB, connect, base string, full bool) *Peer {
	mode := "compatible"
	if full {
		mode = "full"
	}
	return start(t, "curator discovery", peers.CuratorDiscoveryDriver, connect, base, mode)
}

// Cleanup removes the built drivers; call it from TestMain after the tests.
func Cleanup() { peers.Cleanup() }

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

// CuratorSimpleQueue starts a Curator SimpleDistributedQueue on path:
// "offer <item>", "poll", "peek", "take [timeoutMs]" (see the driver).
func CuratorSimpleQueue(t testing.TB, connect, path string) *Peer {
	return curator(t, "curator simplequeue", connect, path, "simplequeue")
}

// CuratorQueue starts a Curator DistributedQueue on path, of variant
// "plain", "priority", "delay" or "id", with lock path lockPath ("" for
// none): a producer ("put <item> [arg]", "putmulti", "puts"), or with
// consume a consumer too, whose "consumed <n> <timeoutMs>" answers the
// items it was given since the last time (see the driver).
func CuratorQueue(t testing.TB, connect, path string, consume bool, lockPath, variant string) *Peer {
	role := "producer"
	if consume {
		role = "consumer"
	}
	if lockPath == "" {
		lockPath = "-"
	}
	return curator(t, "curator "+variant+" queue "+role, connect, path, "queue", role, lockPath, variant)
}

func curator(t testing.TB, name string, args ...string) *Peer {
	return start(t, name, peers.CuratorDriver, args...)
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

// KazooLease starts a Kazoo client that takes Kazoo's NonBlockingLease
// ("lease <path> <seconds> <identifier> [now]") and MultiNonBlockingLease
// ("multilease <count> <path> <seconds> <identifier> [now]"), answering
// LEASE True or LEASE False; "raw <path>" answers RAW and the node's data.
// Now, if given, is Kazoo's utcnow: UTC as 2006-01-02T15:04:05.000000.
func KazooLease(t testing.TB, connect string) *Peer { return kazoo(t, connect, "/", "lease") }

func kazoo(t testing.TB, connect, path, kind string, args ...string) *Peer {
	return start(t, "kazoo "+kind, peers.KazooDriver, append([]string{connect, path, kind}, args...)...)
}

func start(t testing.TB, name string, d *peers.Driver, args ...string) *Peer {
	t.Helper()
	if _, err := d.Command(); err != nil {
		t.Fatal(err)
	}
	proc, err := d.Start(context.Background(), args...)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	cmd := proc.Cmd
	p := &Peer{t: t, name: name, cmd: cmd, in: proc.Stdin, lines: make(chan string, 100), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(proc.Stdout)
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
		if t.Failed() && proc.Stderr() != "" {
			t.Logf("%s stderr:\n%s", name, proc.Stderr())
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
