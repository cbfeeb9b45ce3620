package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// syncBuffer is an output read while the command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// started is a zkrecipes run in the background, which interrupt ends as
// a signal would.
type started struct {
	out, errOut syncBuffer
	code        chan int
	cancel      context.CancelCauseFunc
}

func startRun(t *testing.T, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &started{code: make(chan int, 1), cancel: cancel}
	go func() { s.code <- run(ctx, args, &s.out, &s.errOut) }()
	t.Cleanup(func() { cancel(context.Canceled) })
	return s
}

func (s *started) interrupt(sig syscall.Signal) { s.cancel(signalCause{sig}) }

// wait returns the exit status, failing the test after a minute.
func (s *started) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-s.code:
		return code
	case <-time.After(time.Minute):
		t.Fatalf("still running after a minute; stderr %q", s.errOut.String())
		return -1
	}
}

// holdLock takes the mutex at path with data, on a client of its own.
func holdLock(t *testing.T, ens *zktest.Ensemble, path, data string) *mutex.Mutex {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, err := mutex.New(c, path, mutex.WithData([]byte(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

// nodesUnder waits until dir has n children.
func nodesUnder(t *testing.T, c *zk.Conn, dir string, n int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d nodes under %s", n, dir), func() error {
		kids, _, err := c.Children(dir)
		if errors.Is(err, zk.ErrNoNode) && n == 0 {
			return nil
		}
		if err == nil && len(kids) != n {
			err = fmt.Errorf("%d nodes", len(kids))
		}
		return err
	})
}

// TestTryNamesHolder: --try on a held lock exits 3 (or
// --conflict-exit-code), naming the holder by its node's data.
func TestTryNamesHolder(t *testing.T) {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/job"
	holdLock(t, ens, path, "zkrecipes lock pid 123 on hostA: sleep")
	srv := ens.ConnectString()
	code, out, errOut := runCLI(t, "lock", "--servers", srv, "--try", path, "--", "true")
	if code != 3 || out != "" || !strings.Contains(errOut, path+" is held by zkrecipes lock pid 123 on hostA: sleep (--try)") {
		t.Fatalf("--try: exit %d, %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "lock", "--servers", srv, "--try", "--conflict-exit-code", "75", path, "--", "true"); code != 75 {
		t.Fatalf("--try --conflict-exit-code 75: exit %d", code)
	}
	if code, _, errOut := runCLI(t, "lock", "--servers", srv, "--timeout", "200ms", path, "--", "true"); code != 124 || !strings.Contains(errOut, "not acquired within 200ms") {
		t.Fatalf("--timeout: exit %d, %q", code, errOut)
	}
}

// TestInterruptedWhileWaiting: a signal while waiting ends the wait with
// 128+n, and the waiter's node goes.
func TestInterruptedWhileWaiting(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	path := root + "/job"
	holdLock(t, ens, path, "holder")
	c := ens.Conn(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		s := startRun(t, "lock", "--servers", ens.ConnectString(), path, "--", "true")
		nodesUnder(t, c, path, 2) // it waits
		s.interrupt(tc.sig)
		if code := s.wait(t); code != tc.code || !strings.Contains(s.errOut.String(), "interrupted by "+signalName(tc.sig)) {
			t.Fatalf("%v while waiting: exit %d, %q; want %d", tc.sig, code, s.errOut.String(), tc.code)
		}
		nodesUnder(t, c, path, 1)
	}
	// The same while waiting for an item, and for leadership.
	s := startRun(t, "queue", "take", "--servers", ens.ConnectString(), root+"/q")
	zktest.Eventually(t, 10*time.Second, "the queue is made", func() error {
		_, _, err := c.Get(root + "/q/entries")
		return err
	})
	s.interrupt(syscall.SIGINT)
	if code := s.wait(t); code != 130 {
		t.Fatalf("SIGINT while waiting for an item: exit %d, %q", code, s.errOut.String())
	}
}

// TestSignalContext: SIGTERM cancels the context with its signal.
func TestSignalContext(t *testing.T) {
	ctx, stop := signalContext(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not end the context")
	}
	var sc signalCause
	if !errors.As(context.Cause(ctx), &sc) || sc.sig != syscall.SIGTERM {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
}

// TestHoldWithoutCommand: lock, semaphore and elect without CMD hold
// until a signal, saying what they hold, then release and exit 0. The
// servers come before the command, with a chroot: paths are relative to
// it, on the server and in inspect.
func TestHoldWithoutCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	chrooted := ens.ConnectString() + root + "/app"
	c := ens.Conn(t)
	for _, tc := range []struct {
		args    []string
		holding string
		dir     string // where the node is, under the chroot
	}{
		{[]string{"lock", "/job"}, "holding /job: token ", "/job"},
		{[]string{"semaphore", "--max", "2", "--leases", "2", "/sem"}, "holding 2 leases of /sem: token ", "/sem/leases"},
		{[]string{"elect", "--id", "me", "/lead"}, "leading /lead: token ", "/lead"},
	} {
		s := startRun(t, append([]string{"--servers", chrooted}, tc.args...)...)
		zktest.Eventually(t, 10*time.Second, "it holds", func() error {
			if !strings.Contains(s.out.String(), "\n") {
				return errors.New("nothing printed yet")
			}
			return nil
		})
		line := s.out.String()
		var token int64
		var node string
		if _, err := fmt.Sscanf(strings.TrimPrefix(line, tc.holding), "%d, node %s", &token, &node); err != nil || !strings.HasPrefix(line, tc.holding) || token <= 0 ||
			!strings.HasPrefix(node, tc.dir+"/") {
			t.Fatalf("%v printed %q (%v)", tc.args, line, err)
		}
		first, _, _ := strings.Cut(node, ",")
		if ok, _, err := c.Exists(root + "/app" + first); err != nil || !ok {
			t.Fatalf("%v: %s is not under the chroot on the server (%v)", tc.args, first, err)
		}
		if tc.args[0] == "lock" {
			code, out, errOut := runCLI(t, "inspect", "--servers", chrooted, "/job")
			if code != 0 || !strings.Contains(out, "holder") || !strings.Contains(out, "zkrecipes lock pid") {
				t.Fatalf("inspect through the chroot: exit %d, %q %q", code, out, errOut)
			}
		}
		s.interrupt(syscall.SIGINT)
		if code := s.wait(t); code != 0 {
			t.Fatalf("%v: exit %d after SIGINT, %q", tc.args, code, s.errOut.String())
		}
		nodesUnder(t, c, root+"/app"+tc.dir, 0)
	}
}

// TestHoldWithoutCommandLost: a hold lost while zkrecipes holds without
// CMD ends it with exit 4 and the reason: a suspended connection under
// the standard policy, a lost session under the session policy.
func TestHoldWithoutCommandLost(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := ens.Conn(t)
	for _, tc := range []struct {
		policy, why string
	}{
		{"standard", "lock " + root + "/job lost: connection suspended — counted as lost under the standard policy"},
		{"session", "lock " + root + "/job lost: session lost"},
	} {
		p := ens.Proxy(t)
		s := startRun(t, "lock", "--servers", strings.Join(p.Servers(), ","), "--session-timeout", "1s", "--policy", tc.policy, root+"/job")
		zktest.Eventually(t, 10*time.Second, "it holds", func() error {
			if !strings.Contains(s.out.String(), "holding ") {
				return errors.New("not yet")
			}
			return nil
		})
		p.Blackhole()
		code := s.wait(t)
		p.Restore()
		if code != 4 || !strings.Contains(s.errOut.String(), tc.why) {
			t.Fatalf("--policy %s: exit %d, %q; want 4 and %q", tc.policy, code, s.errOut.String(), tc.why)
		}
		nodesUnder(t, c, root+"/job", 0)
	}
}

// TestVerboseWaiting: -v says who holds and how many wait ahead.
func TestVerboseWaiting(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	srv := ens.ConnectString()
	holdLock(t, ens, root+"/job", "worker-0")
	ahead := startRun(t, "lock", "--servers", srv, root+"/job", "--", "true")
	nodesUnder(t, ens.Conn(t), root+"/job", 2)
	code, _, errOut := runCLI(t, "lock", "-v", "--servers", srv, "--timeout", "1s", root+"/job", "--", "true")
	if code != 124 || !strings.Contains(errOut, "zkrecipes lock: waiting for "+root+"/job: held by worker-0; 1 waiting ahead\n") {
		t.Fatalf("lock -v: exit %d, %q", code, errOut)
	}
	ahead.interrupt(syscall.SIGINT)
	ahead.wait(t)
	// Without -v, and stderr not a terminal: nothing.
	if _, _, errOut := runCLI(t, "lock", "--servers", srv, "--timeout", "500ms", root+"/job", "--", "true"); strings.Contains(errOut, "waiting") {
		t.Fatalf("lock without -v: %q", errOut)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sem, err := semaphore.New(cl, root+"/sem", 1, semaphore.WithData([]byte("lease-holder")))
	if err != nil {
		t.Fatal(err)
	}
	leases, err := sem.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "semaphore", "-v", "--servers", srv, "--max", "1", "--timeout", "1s", root+"/sem", "--", "true")
	if code != 124 || !strings.Contains(errOut, "waiting for 1 lease of "+root+"/sem: 1 lease held by lease-holder; none waiting ahead") {
		t.Fatalf("semaphore -v: exit %d, %q", code, errOut)
	}
	if err := leases[0].Release(ctx); err != nil {
		t.Fatal(err)
	}

	e, err := election.New(cl, root+"/lead", "go-leader")
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Resign(ctx)
	code, _, errOut = runCLI(t, "elect", "--verbose", "--servers", srv, "--timeout", "1s", root+"/lead", "--", "true")
	if code != 124 || !strings.Contains(errOut, "waiting to lead "+root+"/lead: the leader is go-leader; 0 candidates ahead") {
		t.Fatalf("elect -v: exit %d, %q", code, errOut)
	}
}

// TestQueueConventions: items from stdin skip blank lines; a take prints
// a newline after data that lacks one; --try on no queue creates none.
func TestQueueConventions(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	srv := ens.ConnectString()
	var o, e strings.Builder
	inv := invocationFrom(context.Background())
	inv.stdin = strings.NewReader("first\n\n   \nsecond line\n")
	ctx, cancel := context.WithTimeout(withInvocation(context.Background(), inv), time.Minute)
	defer cancel()
	if code := run(ctx, []string{"queue", "put", "--servers", srv, root + "/q"}, &o, &e); code != 0 ||
		!strings.Contains(e.String(), "2 item(s) put") || strings.Contains(e.String(), "reading items") {
		t.Fatalf("put from stdin: exit %d, %q", code, e.String())
	}
	if code, out, _ := runCLI(t, "queue", "take", "--servers", srv, root+"/q"); code != 0 || out != "first\n" {
		t.Fatalf("take: exit %d, %q", code, out)
	}
	if code, _, _ := runCLI(t, "queue", "put", "--servers", srv, root+"/q", "ends with a newline\n"); code != 0 {
		t.Fatal("put")
	}
	runCLI(t, "queue", "take", "--servers", srv, root+"/q")
	if code, out, _ := runCLI(t, "queue", "take", "--servers", srv, root+"/q"); code != 0 || out != "ends with a newline\n" {
		t.Fatalf("take: exit %d, %q", code, out)
	}
	code, _, errOut := runCLI(t, "queue", "take", "--servers", srv, "--try", root+"/nothing")
	if code != 3 || !strings.Contains(errOut, "no item") {
		t.Fatalf("take --try on no queue: exit %d, %q", code, errOut)
	}
	if ok, _, err := ens.Conn(t).Exists(root + "/nothing"); err != nil || ok {
		t.Fatalf("take --try made %s (%v)", root+"/nothing", err)
	}
	if code, _, _ := runCLI(t, "queue", "take", "--servers", srv, "--try", "--conflict-exit-code", "0", root+"/nothing"); code != 0 {
		t.Fatalf("take --try --conflict-exit-code 0: exit %d", code)
	}
}

// TestDeathBySignalIsPassedOn: CMD's death by SIGINT or SIGQUIT makes
// zkrecipes die of it (after exiting run with 128+n); by SIGTERM it exits
// 143; a CMD that merely exits 130 makes zkrecipes exit 130, not die; a
// SIGINT that ends the wait makes it die of SIGINT, a SIGQUIT exits 131.
func TestDeathBySignalIsPassedOn(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, tc := range []struct {
		err  error
		code int
		dies syscall.Signal
	}{
		{&signalExit{sig: syscall.SIGINT}, 130, syscall.SIGINT},
		{&signalExit{sig: syscall.SIGQUIT}, 131, syscall.SIGQUIT},
		{&signalExit{sig: syscall.SIGTERM}, 143, 0},
		{&signalExit{sig: syscall.SIGHUP}, 129, 0},
		{&exitError{code: 130}, 130, 0},
	} {
		code, death := exitOutcome(context.Background(), "lock", tc.err, &out, &errOut)
		var dies syscall.Signal
		if death != nil {
			dies = death.sig
		}
		if code != tc.code || dies != tc.dies {
			t.Errorf("%#v: exit %d, dies of %v; want %d, %v", tc.err, code, dies, tc.code, tc.dies)
		}
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		dies syscall.Signal
	}{{syscall.SIGINT, 130, syscall.SIGINT}, {syscall.SIGQUIT, 131, 0}, {syscall.SIGTERM, 143, 0}} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(signalCause{tc.sig})
		code, death := exitOutcome(ctx, "lock", context.Cause(ctx), &out, &errOut)
		var dies syscall.Signal
		if death != nil {
			dies = death.sig
		}
		if code != tc.code || dies != tc.dies {
			t.Errorf("%v while waiting: exit %d, dies of %v; want %d, %v", tc.sig, code, dies, tc.code, tc.dies)
		}
	}
	// While CMD runs a SIGINT cancels the context too; CMD's own 130 is
	// still only a status.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalCause{syscall.SIGINT})
	if code, death := exitOutcome(ctx, "lock", &exitError{code: 130}, &out, &errOut); code != 130 || death != nil {
		t.Errorf("CMD exited 130 after a SIGINT: exit %d, dies %v", code, death)
	}
}
