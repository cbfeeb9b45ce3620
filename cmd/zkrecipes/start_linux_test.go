//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// testHold is a hold that the test ends.
type testHold struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (h *testHold) Token() int64             { return 1 }
func (h *testHold) Node() string             { return "/test/lock-0000000001" }
func (h *testHold) Done() <-chan struct{}    { return h.ctx.Done() }
func (h *testHold) Context() context.Context { return h.ctx }

// TestLossRightAfterStartReachesCommand checks that a hold lost right
// after zkrecipes told the guardian to start CMD, before the guardian
// said CMD runs, still ends CMD: zkrecipes holds its SIGTERM back until
// "run" (a signal before it would find only the guardian, which drops
// it), then sends it. The group here is a fake whose "guardian" reports
// start when the test says; its CMD already runs, so a SIGTERM sent too
// early would show.
func TestLossRightAfterStartReachesCommand(t *testing.T) {
	dir := t.TempDir()
	trapped, termed := filepath.Join(dir, "trapped"), filepath.Join(dir, "termed")
	script := fmt.Sprintf(`trap 'echo TERM >> %[2]s; exit 0' TERM; touch %[1]s; while :; do sleep 0.02; done`, trapped, termed)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	h := &testHold{ctx, cancel}
	events := make(chan groupEvent, 4)
	startSaid := make(chan bool, 1)
	var cmd *exec.Cmd
	defer func(old func([]string, []string, io.Reader, io.Writer, io.Writer, int, time.Duration) (*cmdGroup, error)) {
		newGroup = old
	}(newGroup)
	newGroup = func(cmdArgs, env []string, stdin io.Reader, stdout, stderr io.Writer, tty int, session time.Duration) (*cmdGroup, error) {
		cmd = exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		for start := time.Now(); ; time.Sleep(5 * time.Millisecond) { // its trap is set
			if _, err := os.Stat(trapped); err == nil {
				break
			}
			if time.Since(start) > 10*time.Second {
				return nil, errors.New("sh did not set its trap")
			}
		}
		waited := make(chan struct{})
		go func() {
			defer close(events)
			err := cmd.Wait()
			<-waited // reported after "run"
			var status error
			if err != nil {
				status = &exitError{code: exitFailure, msg: err.Error()}
			}
			events <- groupEvent{ended: true, status: status}
		}()
		events <- groupEvent{ready: true}
		return &cmdGroup{
			pgid:   cmd.Process.Pid,
			events: events,
			start: func(run bool) {
				startSaid <- run
				cancel(errors.New("lost right after start"))
				go func() {
					time.Sleep(300 * time.Millisecond) // the guardian is slow to start CMD
					events <- groupEvent{started: true}
					close(waited)
				}()
			},
			stop: func() {
				for range events {
				}
			},
		}, nil
	}
	errc := make(chan error, 1)
	go func() {
		errc <- runUnder(h, underRun{name: "lock", what: "lock /test", cmdArgs: []string{"sh"}, grace: 5 * time.Second}, io.Discard, io.Discard)
	}()
	if run := <-startSaid; !run {
		t.Fatal("zkrecipes did not say start while the hold was held")
	}
	time.Sleep(150 * time.Millisecond) // before "run"
	if _, err := os.Stat(termed); err == nil {
		t.Fatal("zkrecipes signalled the group before the guardian said CMD runs")
	}
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("runUnder did not end: CMD never got the SIGTERM")
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitLost {
		t.Fatalf("runUnder: %v, want the loss (exit %d)", err, exitLost)
	}
	if b, _ := os.ReadFile(termed); string(b) != "TERM\n" {
		t.Fatalf("CMD got %q, want one SIGTERM", b)
	}
}

// TestGuardianLinesAreDistinct: each line the guardian writes means one
// thing — a signal it got while waiting to start CMD ("signal N", which
// aborts the start) is not CMD's death by a signal ("killed N").
func TestGuardianLinesAreDistinct(t *testing.T) {
	if ev, ok := parseGuardianLine([]byte("signal 2")); !ok || ev.signal != syscall.SIGINT || ev.ended {
		t.Fatalf("signal 2: %+v, %v", ev, ok)
	}
	ev, ok := parseGuardianLine([]byte("killed 15"))
	se, isSig := ev.status.(*signalExit)
	if !ok || !ev.ended || ev.signal != 0 || !isSig || se.sig != syscall.SIGTERM {
		t.Fatalf("killed 15: %+v, %v", ev, ok)
	}
	if ev, ok := parseGuardianLine([]byte("exit 7")); !ok || !ev.ended {
		t.Fatalf("exit 7: %+v, %v", ev, ok)
	}
}

// startCLIIn starts the built zkrecipes in directory dir with environment
// env (nil: the test's), its stderr going to a file. It is killed and
// reaped when the test ends, if still running.
func startCLIIn(t *testing.T, dir string, env []string, args ...string) *cliRun {
	t.Helper()
	cmd := exec.Command(builtCLI.get(t), args...)
	cmd.Dir, cmd.Env = dir, env
	return startCmd(t, nil, cmd)
}

// slowLookupDir makes a directory in which the relative PATH entry "x" is
// a chain of 38 symbolic links to an empty directory, and returns it with
// an environment whose PATH names "x" as often as an environment string
// allows, before the real PATH. A process started in that directory with
// that environment takes a few hundred milliseconds to look a program up
// in PATH (exec.LookPath of a bare name such as "sh"): the looking up is
// slowed down, nothing else. It widens the window between the moment the
// guardian starts and the moment it starts CMD, which is otherwise a
// fraction of a millisecond wide, so that a test can act inside it.
func slowLookupDir(t *testing.T) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	prev := "empty"
	for i := range 37 {
		name := "l" + strconv.Itoa(i)
		if err := os.Symlink(prev, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		prev = name
	}
	if err := os.Symlink(prev, filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	path := strings.Repeat("x:", 60000) + os.Getenv("PATH")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return dir, append(env, "PATH="+path)
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	names, _ := filepath.Glob("/proc/[0-9]*")
	for _, name := range names {
		p, _ := strconv.Atoi(filepath.Base(name))
		if st, err := readProcStat(p); err == nil && st.ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// waitGuardian waits for zkrecipes (pid) to start its guardian, and
// returns the guardian's pid.
func waitGuardian(t *testing.T, pid int) int {
	t.Helper()
	var g int
	zktest.Eventually(t, 60*time.Second, "zkrecipes starts its guardian", func() error {
		for _, kid := range childrenOf(pid) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(kid) + "/cmdline")
			if err == nil && strings.Contains(string(b), guardianArg) {
				g = kid
				return nil
			}
		}
		return errors.New("no guardian yet")
	})
	return g
}

// inGuardianWindow waits until the guardian g has surely got past its
// start-up (its runtime's start and signal.Notify: a few milliseconds) and
// checks that it has not started CMD yet. It fails the test when the
// window was missed: then the test shows nothing.
func inGuardianWindow(t *testing.T, g int, started string) {
	t.Helper()
	time.Sleep(60 * time.Millisecond)
	if _, err := os.Stat(started); err == nil || len(childrenOf(g)) > 0 {
		t.Fatalf("the guardian %d started the command before the test could act (children %v): the window was missed", g, childrenOf(g))
	}
}

// TestLockLostWhileGuardianStartsNeverRunsCommand: a hold lost between
// zkrecipes starting its guardian and the guardian starting CMD (the lock
// node deleted by another client) means CMD never runs, and zkrecipes exits
// 4 (docs/cli.md, "The command never outlives its hold": Start).
//
// A SIGTERM to the group cannot cover this window: the group then holds
// only the guardian, which catches every signal while zkrecipes is its
// parent. So the guardian waits for zkrecipes' word, and zkrecipes looks at
// the hold right before it gives it. The window is normally well under a
// millisecond (the guardian's exec.Command looking CMD up in PATH); the test
// widens it with a slow PATH lookup (slowLookupDir), it does not create it.
func TestLockLostWhileGuardianStartsNeverRunsCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir, env := slowLookupDir(t)
	tmp := t.TempDir()
	started, termed := filepath.Join(tmp, "started"), filepath.Join(tmp, "termed")
	script := fmt.Sprintf(`PATH=/usr/bin:/bin; trap 'echo TERM >> %[2]s' TERM; date +%%s.%%N > %[1]s; while :; do sleep 0.05; done`, started, termed)
	c := ens.Conn(t)
	r := startCLIIn(t, dir, env, "lock", "--servers", ens.ConnectString(), "--grace", "3s", root+"/job", "--", "sh", "-c", script)
	g := waitGuardian(t, r.cmd.Process.Pid)
	kids, _, err := c.Children(root + "/job")
	if err != nil || len(kids) != 1 {
		t.Fatalf("lock nodes %v, %v", kids, err)
	}
	inGuardianWindow(t, g, started)

	if err := c.Delete(root+"/job/"+kids[0], -1); err != nil { // the lock is lost
		t.Fatal(err)
	}
	lostAt := time.Now()
	code := r.wait(t, 60*time.Second)
	t.Logf("zkrecipes exited %d; stderr:\n%s", code, r.errOut())
	if b, err := os.ReadFile(started); err == nil {
		var sec float64
		_, _ = fmt.Sscan(string(b), &sec)
		startedAt := time.Unix(0, int64(sec*1e9))
		_, termErr := os.Stat(termed)
		t.Fatalf("the command started %v after the lock was lost (it got SIGTERM: %v); exit %d",
			startedAt.Sub(lostAt).Round(time.Millisecond), termErr == nil, code)
	}
	if code != exitLost {
		t.Fatalf("exit %d, want %d", code, exitLost)
	}
}

// TestSignalWhileGuardianStartsReachesCommand: a SIGTERM sent to zkrecipes
// once the lock is held and the guardian runs, but before the guardian has
// started CMD, either keeps CMD from running (exit 143) or reaches it
// exactly once — never lost, as it would be were it only passed on to a
// group in which the guardian, which catches every signal, runs alone.
// The window is widened as in
// TestLockLostWhileGuardianStartsNeverRunsCommand.
func TestSignalWhileGuardianStartsReachesCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir, env := slowLookupDir(t)
	tmp := t.TempDir()
	started, termed, stop := filepath.Join(tmp, "started"), filepath.Join(tmp, "termed"), filepath.Join(tmp, "stop")
	script := fmt.Sprintf(`PATH=/usr/bin:/bin; trap 'echo TERM >> %[2]s' TERM; echo $$ > %[1]s; while [ ! -e %[3]s ]; do sleep 0.05; done`, started, termed, stop)
	r := startCLIIn(t, dir, env, "lock", "--servers", ens.ConnectString(), root+"/job", "--", "sh", "-c", script)
	g := waitGuardian(t, r.cmd.Process.Pid)
	inGuardianWindow(t, g, started)

	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "the command starts, or zkrecipes ends", func() error {
		select {
		case <-r.done:
			return nil
		default:
		}
		_, err := os.Stat(started)
		return err
	})
	if _, err := os.Stat(started); err != nil {
		// CMD never started: fine if zkrecipes says it was a signal.
		if r.wait(t, time.Second) != exitSignal+int(syscall.SIGTERM) {
			t.Fatalf("the command never started, and zkrecipes exited %d, not %d; stderr %q", r.code, exitSignal+int(syscall.SIGTERM), r.errOut())
		}
		return
	}
	waitPid(t, started)
	time.Sleep(500 * time.Millisecond) // time for the SIGTERM to be trapped, had it come
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 30*time.Second)
	b, _ := os.ReadFile(termed)
	if n := strings.Count(string(b), "TERM"); n != 1 {
		t.Fatalf("the command got %d SIGTERMs, want the 1 sent to zkrecipes; zkrecipes exited %d; stderr %q", n, code, r.errOut())
	}
}
