//go:build linux

package main

// Adversarial tests of the promise of the commands that run CMD under a
// hold: the command runs only while the hold is held. Each test drives the
// built binary against a real ZooKeeper and says, in its comment, which
// promise it checks.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

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

// TestLockLostWhileGuardianStartsNeverRunsCommand checks the core promise,
// the command runs only while the hold is held, when the hold is lost in
// the moment between zkrecipes starting its guardian and the guardian
// starting CMD (the lock node is deleted by another client).
//
// What happens instead: runUnder sends SIGTERM to the group at once, but
// the group holds only the guardian, which catches every signal
// (signal.Notify) and drops it because zkrecipes is still its parent. The
// guardian then starts CMD anyway, after the lock was lost; CMD never
// gets a SIGTERM, and runs beside whoever takes the lock next until the
// SIGKILL of the grace period. Nothing in runUnder or in the guardian
// checks the hold, or replays signals that came before CMD existed. The
// window is normally well under a millisecond (the guardian's exec.Command
// looking CMD up in PATH); the test widens it with a slow PATH lookup
// (slowLookupDir), it does not create it.
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

// TestSignalWhileGuardianStartsReachesCommand checks promise 4, signals
// sent to zkrecipes are passed on to CMD's group exactly once, for a
// SIGTERM that comes once the lock is held and the guardian runs, but
// before the guardian has started CMD.
//
// What happens instead: zkrecipes passes the SIGTERM on to the group, in
// which only the guardian runs yet; the guardian catches it and drops it.
// CMD starts after it and never hears of it: a supervisor's SIGTERM is
// lost, CMD runs on to its end, and zkrecipes exits with CMD's 0. (If the
// signal lands even earlier, in the guardian's runtime start-up, it kills
// the guardian instead and zkrecipes says "the process guarding sh ended
// unexpectedly", exit 1, rather than 143.) The window is widened as in
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

// TestCommandThatCannotBeExecutedExits126Or127 checks promise 6: 126 when
// CMD cannot be run, 127 when it is not found, as a shell (and env,
// timeout, flock) says. checkCommand only asks exec.LookPath, which finds
// any file with an execute bit; the execve itself happens later, in the
// guardian, once the lock is held.
//
// What happens instead: a script whose interpreter does not exist (bash:
// "required file not found", 127), or a file that is not an executable
// format (bash: "cannot execute binary file", 126), passes the check, the
// lock is taken, the guardian fails to start it and reports "fail ...",
// and zkrecipes exits 1, the status of its own failures.
func TestCommandThatCannotBeExecutedExits126Or127(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	badInterpreter, badFormat := filepath.Join(dir, "bad-interpreter"), filepath.Join(dir, "bad-format")
	if err := os.WriteFile(badInterpreter, []byte("#!/nonexistent/interpreter\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badFormat, append([]byte("\x7fELF"), make([]byte, 64)...), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		want int
	}{{badInterpreter, exitNotFound}, {badFormat, exitCannotRun}} {
		r := startCLI(t, "lock", "--servers", ens.ConnectString(), root+"/job", "--", tc.cmd)
		if code := r.wait(t, 30*time.Second); code != tc.want {
			t.Errorf("%s: exit %d, want %d as a shell gives; stderr %q", filepath.Base(tc.cmd), code, tc.want, r.errOut())
		}
	}
}

// lostNodeScript is a command that notes its pid in pidFile, and when it
// gets SIGTERM writes TERM to termFile and exits.
func lostNodeScript(pidFile, termFile string) string {
	return fmt.Sprintf(`trap 'echo TERM > %[2]s; exit 0' TERM; echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; while :; do sleep 0.05; done`, pidFile, termFile)
}

// waitChildren waits until path has n children and returns them.
func waitChildren(t *testing.T, ens *zktest.Ensemble, path string, n int) []string {
	t.Helper()
	c := ens.Conn(t)
	var kids []string
	zktest.Eventually(t, 30*time.Second, fmt.Sprintf("%d nodes under %s", n, path), func() error {
		var err error
		kids, _, err = c.Children(path)
		if err == nil && len(kids) != n {
			err = fmt.Errorf("%d nodes", len(kids))
		}
		return err
	})
	return kids
}

// TestSemaphoreLeaseDeletedSaysSo checks promise 1's report: when a hold
// is lost because someone deleted its node, zkrecipes says so ("its node
// was deleted"), as lock does (lossCause, held.go).
//
// What happens instead: the command is stopped and zkrecipes exits 4, but
// it says "connection suspended — counted as lost under the standard
// policy", which did not happen. newLeaseHold gives AnyLost a cause made
// in advance, semaphore.ErrLeaseLost plus the node's name, for every lease:
// the lease's own cause, which wraps lockcore.ErrNodeGone, is dropped, and
// lossCause falls back on the session's state. Under --policy session it
// would say "session lost" just as wrongly. An operator who deleted a
// stuck lease node on purpose is told to look at the network.
func TestSemaphoreLeaseDeletedSaysSo(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	pidFile, termFile := filepath.Join(dir, "pid"), filepath.Join(dir, "term")
	r := startCLI(t, "semaphore", "--servers", ens.ConnectString(), "--max", "3", "--leases", "2", "--grace", "5s", root+"/sem", "--",
		"sh", "-c", lostNodeScript(pidFile, termFile))
	pid := waitPid(t, pidFile)
	kids := waitChildren(t, ens, root+"/sem/leases", 2)
	if err := ens.Conn(t).Delete(root+"/sem/leases/"+kids[1], -1); err != nil { // one of the two leases is lost
		t.Fatal(err)
	}
	code := r.wait(t, 30*time.Second)
	if alive(pid) {
		t.Fatalf("the command %d still runs after zkrecipes exited", pid)
	}
	if _, err := os.Stat(termFile); err != nil {
		t.Fatalf("the command did not get SIGTERM: %v", err)
	}
	if code != exitLost || !strings.Contains(r.errOut(), errLostNode.Error()) {
		t.Fatalf("exit %d, stderr %q; want %d saying %q", code, r.errOut(), exitLost, errLostNode)
	}
	waitChildren(t, ens, root+"/sem/leases", 0) // the other lease is released
}

// TestElectLeaderNodeDeletedStopsCommand (a probe that passes) checks
// promise 1 for elect: the leader's node deleted by someone while CMD
// runs; CMD gets SIGTERM, zkrecipes says the node was deleted and exits 4
// once nothing of CMD runs, and another candidate can lead.
func TestElectLeaderNodeDeletedStopsCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	pidFile, termFile := filepath.Join(dir, "pid"), filepath.Join(dir, "term")
	r := startCLI(t, "elect", "--servers", ens.ConnectString(), "--grace", "5s", root+"/leader", "--", "sh", "-c", lostNodeScript(pidFile, termFile))
	pid := waitPid(t, pidFile)
	kids := waitChildren(t, ens, root+"/leader", 1)
	if err := ens.Conn(t).Delete(root+"/leader/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 30*time.Second)
	if alive(pid) {
		t.Fatalf("the command %d still runs after zkrecipes exited", pid)
	}
	if _, err := os.Stat(termFile); err != nil {
		t.Fatalf("the command did not get SIGTERM: %v; stderr %q", err, r.errOut())
	}
	if code != exitLost || !strings.Contains(r.errOut(), errLostNode.Error()) {
		t.Fatalf("exit %d, stderr %q; want %d saying %q", code, r.errOut(), exitLost, errLostNode)
	}
	next := startCLI(t, "elect", "--servers", ens.ConnectString(), "--timeout", "20s", root+"/leader", "--", "true")
	if code := next.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("the next candidate: exit %d, %q", code, next.errOut())
	}
}

// TestQueueTakeLostPutsItemBack (a probe that passes) checks promise 1
// for queue take: the taken node deleted by someone while CMD works on
// the item; CMD gets SIGTERM, zkrecipes exits 4 once nothing of CMD runs,
// the item is not consumed although CMD then exits 0, and another worker
// takes it again.
func TestQueueTakeLostPutsItemBack(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	srv := ens.ConnectString()
	if code, _, errOut := runCLI(t, "queue", "put", "--servers", srv, root+"/q", "the-item"); code != 0 {
		t.Fatalf("put: exit %d, %q", code, errOut)
	}
	dir := t.TempDir()
	pidFile, termFile := filepath.Join(dir, "pid"), filepath.Join(dir, "term")
	r := startCLI(t, "queue", "take", "--servers", srv, "--grace", "5s", root+"/q", "--", "sh", "-c", lostNodeScript(pidFile, termFile))
	pid := waitPid(t, pidFile)
	kids := waitChildren(t, ens, root+"/q/taken", 1)
	if err := ens.Conn(t).Delete(root+"/q/taken/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 30*time.Second)
	if alive(pid) {
		t.Fatalf("the command %d still runs after zkrecipes exited", pid)
	}
	if _, err := os.Stat(termFile); err != nil {
		t.Fatalf("the command did not get SIGTERM: %v; stderr %q", err, r.errOut())
	}
	if code != exitLost || !strings.Contains(r.errOut(), errLostNode.Error()) {
		t.Fatalf("exit %d, stderr %q; want %d saying %q", code, r.errOut(), exitLost, errLostNode)
	}
	if code, out, errOut := runCLI(t, "queue", "take", "--servers", srv, "--try", root+"/q"); code != 0 || out != "the-item\n" {
		t.Fatalf("the item after the lost take: exit %d, %q %q; want it taken again", code, out, errOut)
	}
}

// pythonPath is the Python 3 interpreter itself (not a wrapper such as a
// pyenv shim), or the test skips.
func pythonPath(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Skipf("no python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestTerminalHangupReachesCommandOnce checks promise 4 for the other
// signal a terminal sends, SIGHUP: the terminal of an interactive shell
// hangs up (an ssh connection drops) while zkrecipes runs CMD as the
// shell's foreground job. As for Ctrl-C, CMD should hear of it once.
//
// What happens instead: CMD gets SIGHUP twice. zkrecipes made CMD's group
// the terminal's foreground group, so when the session leader (bash)
// exits after the hangup, the kernel sends SIGHUP to that group itself
// (tty_old_pgrp); and bash, on its SIGHUP, sends SIGHUP to its jobs,
// zkrecipes among them, which passes it on to CMD's group. A command that
// reloads, or counts, on SIGHUP does it twice. (The command here handles
// each signal as it comes, in Python; a shell's trap, slower to run, may
// merge the two when they come close together.)
func TestTerminalHangupReachesCommandOnce(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for an interactive shell")
	}
	python := pythonPath(t)
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	cpidFile, count, stop, script := filepath.Join(dir, "child"), filepath.Join(dir, "count"), filepath.Join(dir, "stop"), filepath.Join(dir, "cmd.py")
	body := fmt.Sprintf(`import os, signal, time
log = os.open(%[2]q, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
def hup(sig, frame):
    os.write(log, b"HUP %%d\n" %% time.monotonic_ns())
signal.signal(signal.SIGHUP, hup)
with open(%[1]q + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(%[1]q + ".tmp", %[1]q)
while not os.path.exists(%[3]q):
    time.sleep(0.05)
`, cpidFile, count, stop)
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	shell, master, screen := startOnTerminal(t, "bash", "--norc", "--noprofile", "-i")
	// The shell holds 64 MB, which takes its exit, and with it the
	// kernel's SIGHUP, a few milliseconds: the two SIGHUPs then come far
	// enough apart not to merge into one pending signal. Without it they
	// are a fraction of a millisecond apart and merge now and then.
	line := fmt.Sprintf("printf -v pad '%%*s' 64000000 ''; %s lock --servers %s %s -- %s %s\n", builtCLI.get(t), ens.ConnectString(), root+"/job", python, script)
	if _, err := master.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	child := waitPid(t, cpidFile)
	st, err := readProcStat(child)
	if err != nil {
		t.Fatal(err)
	}
	if fg := foregroundGroup(t, master); fg != st.pgrp {
		t.Fatalf("foreground group %d, the command's %d; terminal:\n%s", fg, st.pgrp, screen.String())
	}
	master.Close() // the terminal hangs up
	shell.wait(t, 30*time.Second)
	zktest.Eventually(t, 10*time.Second, "the command counts a SIGHUP", func() error {
		_, err := os.Stat(count)
		return err
	})
	time.Sleep(500 * time.Millisecond) // time for a second one, if any
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "the command ends", func() error {
		if alive(child) {
			return errors.New("still running")
		}
		return nil
	})
	if b, _ := os.ReadFile(count); strings.Count(string(b), "HUP") != 1 {
		t.Fatalf("the command got %d SIGHUPs from one hangup, want 1:\n%s", strings.Count(string(b), "HUP"), b)
	}
}

// TestLeftoverWithoutMainThreadGetsItsGrace checks promise 2: what CMD
// leaves running in its group gets SIGTERM, then SIGKILL after --grace,
// before the lock is released. The leftover here is a process whose main
// thread has ended (pthread_exit, or the exit system call, in main) while
// another thread works on; it handles SIGTERM by carrying on.
//
// What happens instead: /proc/PID/stat of such a process shows its main
// thread's state, Z, and cmdGroup.running counts zombies as not running;
// so once CMD ends zkrecipes sees an empty group, says nothing of a
// leftover, sends no SIGTERM and gives no grace: close's SIGKILL is the
// first signal the leftover gets, right before the release. (The fix is to
// look at every thread, /proc/PID/task/*/stat, not only at the leader.)
func TestLeftoverWithoutMainThreadGetsItsGrace(t *testing.T) {
	python := pythonPath(t)
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	lpidFile, ticks, goFile, leftover := filepath.Join(dir, "leftover"), filepath.Join(dir, "ticks"), filepath.Join(dir, "go"), filepath.Join(dir, "leftover.py")
	body := fmt.Sprintf(`import ctypes, os, signal, threading, time
def work():
    while True:
        with open(%[2]q, "a") as f:
            f.write("tick\n")
        time.sleep(0.02)
signal.signal(signal.SIGTERM, lambda sig, frame: None)  # its handler never runs: the main thread is gone
threading.Thread(target=work).start()
with open(%[1]q + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(%[1]q + ".tmp", %[1]q)
ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: the main thread ends, the process goes on
`, lpidFile, ticks)
	if err := os.WriteFile(leftover, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`%s %s & while [ ! -e %s ]; do sleep 0.02; done; exit 5`, python, leftover, goFile)
	r := startCLI(t, "lock", "--servers", ens.ConnectString(), "--grace", "1s", root+"/job", "--", "sh", "-c", script)
	lpid := waitPid(t, lpidFile)
	zktest.Eventually(t, 10*time.Second, "the leftover's main thread ends", func() error {
		if st, err := readProcStat(lpid); err != nil || st.state != 'Z' || len(mustTasks(lpid)) < 1 {
			return fmt.Errorf("state %c, %v", st.state, err)
		}
		return nil
	})
	node := lockNode(t, ens, root+"/job")
	_, _, watch, err := ens.Conn(t).ExistsW(node)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil { // the command ends
		t.Fatal(err)
	}
	endedAt := time.Now()
	select {
	case <-watch:
	case <-time.After(30 * time.Second):
		t.Fatal("the lock node was not deleted")
	}
	took, threadsAtRelease := time.Since(endedAt), len(mustTasks(lpid))
	code := r.wait(t, 30*time.Second)
	if threadsAtRelease > 0 {
		t.Fatalf("the lock was released while the leftover %d still ran (%d threads)", lpid, threadsAtRelease)
	}
	t.Logf("released %v after the command ended; exit %d; stderr %q", took.Round(time.Millisecond), code, r.errOut())
	if !strings.Contains(r.errOut(), "left processes") || took < 900*time.Millisecond {
		t.Fatalf("the lock was released %v after the command ended, without a word of the leftover %d that ignores SIGTERM (want SIGTERM, then SIGKILL after the 1s grace)",
			took.Round(time.Millisecond), lpid)
	}
	if code != 5 {
		t.Fatalf("exit %d, want the command's 5", code)
	}
}

// mustTasks lists the threads of pid that are not zombies.
func mustTasks(pid int) []string {
	var live []string
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if i := strings.LastIndexByte(string(b), ')'); err == nil && i > 0 && i+2 < len(b) && b[i+2] != 'Z' {
			live = append(live, task)
		}
	}
	return live
}

// TestContinuedAfterLossDoesNotRunBesideNextHolder checks the core
// promise across job control: the job (zkrecipes and CMD) is stopped with
// Ctrl-Z, the hold is lost meanwhile (here its node is deleted; a stop
// longer than the session timeout does the same, which cmdStopped's
// comment describes) and another participant takes the lock; then the
// shell's fg continues zkrecipes. CMD must not run again beside the new
// holder: it should get SIGTERM before it is continued, as terminate()
// does (SIGTERM, then SIGCONT: the kernel delivers the SIGTERM first).
//
// What happens instead, now and then (about one run in four or five):
// zkrecipes passes the SIGCONT on to CMD's group the moment it gets it,
// without asking the hold, and notices the loss only afterwards; CMD
// resumes while the other participant holds the lock (its SIGCONT handler
// runs) and gets SIGTERM a fraction of a millisecond to a millisecond
// later. Which comes first is a race between two goroutines of zkrecipes
// (the signal's, and the one that hears of the loss); the test runs the
// scenario several times to lose it at least once. cmdStopped's comment
// says CMD "gets SIGTERM soon after it is continued": that is the defect,
// stated. The fix: on SIGCONT, look at the hold first (m.Done(), and the
// session's deadline, which a stop of zkrecipes lets pass unnoticed), and
// terminate() if it is over.
func TestContinuedAfterLossDoesNotRunBesideNextHolder(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for job control")
	}
	python := pythonPath(t)
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := ens.Conn(t)
	const runs = 10
	ranBeside := 0
	for i := range runs {
		if b := continuedAfterLoss(t, ens, c, python, fmt.Sprintf("%s/job-%d", root, i)); strings.HasPrefix(b, "SIGCONT") {
			ranBeside++
			t.Logf("run %d: the command was continued, and ran, while another participant held the lock:\n%s", i, b)
		}
	}
	if ranBeside > 0 {
		t.Fatalf("in %d of %d runs the command ran beside the next holder after fg", ranBeside, runs)
	}
}

// continuedAfterLoss runs the scenario of
// TestContinuedAfterLossDoesNotRunBesideNextHolder once, on lock path,
// and returns the signals the command noted, in order.
func continuedAfterLoss(t *testing.T, ens *zktest.Ensemble, c *zk.Conn, python, path string) string {
	dir := t.TempDir()
	cpidFile, log, status, goFile, script := filepath.Join(dir, "child"), filepath.Join(dir, "log"), filepath.Join(dir, "status"), filepath.Join(dir, "go"), filepath.Join(dir, "cmd.py")
	body := fmt.Sprintf(`import os, signal, sys, time
log = os.open(%[2]q, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
def note(sig, frame):
    os.write(log, b"%%s %%d\n" %% (signal.Signals(sig).name.encode(), time.monotonic_ns()))
    if sig == signal.SIGTERM:
        sys.exit(0)
signal.signal(signal.SIGCONT, note)
signal.signal(signal.SIGTERM, note)
with open(%[1]q + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(%[1]q + ".tmp", %[1]q)
while True:
    time.sleep(0.05)
`, cpidFile, log)
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// bash with job control, as at a prompt: zkrecipes is a job of its own;
	// fg once the test says so.
	shell := fmt.Sprintf(`set -m; "$0" "$@"; echo "stopped $?" > %[1]s.tmp && mv %[1]s.tmp %[1]s
while [ ! -e %[2]s ]; do sleep 0.02; done; fg; echo "ended $?" >> %[1]s`, status, goFile)
	r, master, screen := startOnTerminal(t, "bash", "-c", shell, builtCLI.get(t), "lock", "--servers", ens.ConnectString(), path, "--", python, script)
	child := waitPid(t, cpidFile)
	node := lockNode(t, ens, path)
	if _, err := master.Write([]byte{26}); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the shell sees the job stopped", func() error {
		_, err := os.Stat(status)
		return err
	})
	if err := c.Delete(node, -1); err != nil { // the lock is lost while the job is stopped
		t.Fatal(err)
	}
	m := holdLock(t, ens, path, "next holder")
	if err := os.WriteFile(goFile, nil, 0o644); err != nil { // fg
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("the shell exited %d; terminal:\n%s", code, screen.String())
	}
	if alive(child) {
		t.Fatalf("the command %d still runs", child)
	}
	if st, _ := os.ReadFile(status); !strings.Contains(string(st), "ended 4") {
		t.Fatalf("after fg zkrecipes did not exit 4 (lost): %q; terminal:\n%s", st, screen.String())
	}
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	return string(b)
}

// TestStoppedCLIDoesNotLeaveCommandBesideNextHolder checks the core
// promise when zkrecipes itself is stopped (SIGSTOP: a debugger, an
// operator's kill -STOP, a stuck process-freezing tool) while CMD runs:
// zkrecipes no longer keeps its session, which expires, and another
// participant takes the lock.
//
// What happens instead: CMD runs on beside the next holder for as long as
// zkrecipes stays stopped. The guardian watches only for zkrecipes' death
// (socket EOF, parent death signal, parent change), not for its silence.
// This is a limit the guardian's comment states ("SIGSTOP of zkrecipes
// stops its session's heartbeats without stopping CMD"), but it breaks the
// promise as surely as a SIGKILL would, and the guardian could cover it:
// zkrecipes could beat over the socket it already shares with the
// guardian, and the guardian kill the group when the beats stop for less
// than the session timeout.
func TestStoppedCLIDoesNotLeaveCommandBesideNextHolder(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	cpidFile := filepath.Join(dir, "child")
	script := fmt.Sprintf(`echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; while :; do sleep 0.05; done`, cpidFile)
	r := startCLI(t, "lock", "--servers", ens.ConnectString(), "--session-timeout", "2s", root+"/job", "--", "sh", "-c", script)
	child := waitPid(t, cpidFile)
	lockNode(t, ens, root+"/job")
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Signal(syscall.SIGCONT) })
	stoppedAt := time.Now()
	m := holdLock(t, ens, root+"/job", "next holder") // once zkrecipes' session has expired
	t.Logf("another participant holds the lock %v after zkrecipes was stopped", time.Since(stoppedAt).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	stillRunning := alive(child)
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if stillRunning {
		t.Fatalf("the command %d runs beside the next holder while zkrecipes is stopped", child)
	}
}

// --- Probes that pass: coverage the other tests lack. ---

// TestSecondSignalWhileCommandRunsIsPassedOn (passes) checks promises 4
// and 6 against signals.go's "a second signal ends zkrecipes at once":
// while CMD runs, a second SIGINT is passed on like the first (CMD gets
// two), zkrecipes does not end, exits with CMD's status (0, though
// signals came), and releases the lock at once rather than leaving it to
// the session's expiry.
func TestSecondSignalWhileCommandRunsIsPassedOn(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	cpidFile, count, stop := filepath.Join(dir, "child"), filepath.Join(dir, "count"), filepath.Join(dir, "stop")
	script := fmt.Sprintf(`trap 'echo INT >> %[2]s' INT; echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s
while [ ! -e %[3]s ]; do sleep 0.05; done`, cpidFile, count, stop)
	r := startCLI(t, "lock", "--servers", ens.ConnectString(), "--session-timeout", "20s", root+"/job", "--", "sh", "-c", script)
	waitPid(t, cpidFile)
	node := lockNode(t, ens, root+"/job")
	for n := 1; n <= 2; n++ {
		if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		zktest.Eventually(t, 10*time.Second, fmt.Sprintf("the command counts SIGINT %d", n), func() error {
			if b, _ := os.ReadFile(count); strings.Count(string(b), "INT") < n {
				return errors.New("not yet")
			}
			return nil
		})
	}
	select {
	case <-r.done:
		t.Fatalf("zkrecipes ended on the second SIGINT while the command ran: exit %d, %q", r.code, r.errOut())
	case <-time.After(300 * time.Millisecond):
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d, want the command's 0; stderr %q", code, r.errOut())
	}
	if ok, _, err := ens.Conn(t).Exists(node); err != nil || ok { // released, not left to a 20s expiry
		t.Fatalf("the lock node after zkrecipes exited: exists %v, %v", ok, err)
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "INT") != 2 {
		t.Fatalf("the command got %d SIGINTs, want 2", strings.Count(string(b), "INT"))
	}
}

// TestSignalOrKillWhileWaitingStartsNothing (passes) checks promises 3 and
// 6 before CMD: SIGTERM while waiting for the lock exits 143 and takes the
// waiting node away at once; SIGKILL while waiting leaves the node to the
// session's expiry, and no CMD ever starts, though the lock comes free
// meanwhile.
func TestSignalOrKillWhileWaitingStartsNothing(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	path := root + "/job"
	c := ens.Conn(t)
	m := holdLock(t, ens, path, "holder")
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	script := fmt.Sprintf(`echo started >> %s`, started)

	r := startCLI(t, "lock", "--servers", ens.ConnectString(), "--session-timeout", "2s", path, "--", "sh", "-c", script)
	nodesUnder(t, c, path, 2)
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != 143 {
		t.Fatalf("SIGTERM while waiting: exit %d, %q", code, r.errOut())
	}
	if kids, _, err := c.Children(path); err != nil || len(kids) != 1 { // at once, no expiry
		t.Fatalf("after SIGTERM while waiting: %v, %v; want only the holder's node", kids, err)
	}

	r = startCLI(t, "lock", "--servers", ens.ConnectString(), "--session-timeout", "2s", path, "--", "sh", "-c", script)
	nodesUnder(t, c, path, 2)
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 30*time.Second)
	if err := m.Unlock(context.Background()); err != nil { // the dead waiter's node is first now
		t.Fatal(err)
	}
	nodesUnder(t, c, path, 0) // its session expires
	m2 := holdLock(t, ens, path, "next holder")
	if err := m2.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(started); err == nil {
		t.Fatal("a command started although zkrecipes was ended while waiting")
	}
}

// TestLossOfStoppedCommandThatIgnoresTerm (passes) checks promise 1 for a
// command that ignores SIGTERM and has stopped itself (SIGSTOP): on loss it
// gets SIGTERM and SIGCONT, runs on ignoring the SIGTERM, and gets SIGKILL
// after the grace; zkrecipes waits for that and exits 4. Also with
// --grace 0: SIGKILL at once.
func TestLossOfStoppedCommandThatIgnoresTerm(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := ens.Conn(t)
	for _, grace := range []time.Duration{time.Second, 0} {
		dir := t.TempDir()
		cpidFile, cont := filepath.Join(dir, "child"), filepath.Join(dir, "cont")
		script := fmt.Sprintf(`trap '' TERM; trap 'echo CONT >> %[2]s' CONT; echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; kill -STOP $$; while :; do sleep 0.05; done`, cpidFile, cont)
		path := fmt.Sprintf("%s/job-%v", root, grace)
		r := startCLI(t, "lock", "--servers", ens.ConnectString(), "--grace", grace.String(), path, "--", "sh", "-c", script)
		child := waitPid(t, cpidFile)
		zktest.Eventually(t, 10*time.Second, "the command stops itself", func() error {
			if st, err := readProcStat(child); err != nil || st.state != 'T' {
				return fmt.Errorf("state %c %v", st.state, err)
			}
			return nil
		})
		node := lockNode(t, ens, path)
		if err := c.Delete(node, -1); err != nil {
			t.Fatal(err)
		}
		lostAt := time.Now()
		code := r.wait(t, 30*time.Second)
		took := time.Since(lostAt)
		if alive(child) || code != exitLost || !strings.Contains(r.errOut(), "SIGKILL") || took < grace-100*time.Millisecond {
			t.Fatalf("--grace %v: exit %d %v after the loss, command alive %v; stderr %q", grace, code, took, alive(child), r.errOut())
		}
		if grace > 0 {
			if _, err := os.Stat(cont); err != nil {
				t.Fatalf("the stopped command was not continued before its SIGKILL")
			}
		}
	}
}

// TestKilledGuardianStillTerminatesGroup (passes) checks the guardian's
// stated limit: SIGKILL to the guardian alone. CMD dies with it
// (PR_SET_PDEATHSIG), zkrecipes says so and exits 1, and a grandchild
// that ignores SIGTERM is killed after the grace, before the lock is
// released.
func TestKilledGuardianStillTerminatesGroup(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	cpidFile, gpidFile := filepath.Join(dir, "child"), filepath.Join(dir, "grandchild")
	script := fmt.Sprintf(`(trap '' TERM; exec sleep 300) & echo $! > %[1]s.tmp && mv %[1]s.tmp %[1]s; echo $$ > %[2]s.tmp && mv %[2]s.tmp %[2]s; wait`, gpidFile, cpidFile)
	r := startCLI(t, "lock", "--servers", ens.ConnectString(), "--grace", "1s", root+"/job", "--", "sh", "-c", script)
	child, grandchild := waitPid(t, cpidFile), waitPid(t, gpidFile)
	st, err := readProcStat(child)
	if err != nil {
		t.Fatal(err)
	}
	node := lockNode(t, ens, root+"/job")
	_, _, watch, err := ens.Conn(t).ExistsW(node)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.ppid, syscall.SIGKILL); err != nil { // the guardian
		t.Fatal(err)
	}
	select {
	case <-watch:
		if alive(grandchild) || alive(child) {
			t.Fatalf("the lock was released while the command (alive %v) or its grandchild (alive %v) ran", alive(child), alive(grandchild))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the lock node was not deleted")
	}
	if code := r.wait(t, 30*time.Second); code != exitFailure || !strings.Contains(r.errOut(), "ended unexpectedly") {
		t.Fatalf("exit %d, stderr %q", code, r.errOut())
	}
}

// TestLossWhileCommandBlocksOnFullPipe (passes) checks promise 1 for a
// command blocked writing to a stdout nobody reads (a full pipe) when the
// lock is lost: it ends, by SIGTERM or by the SIGKILL after the grace,
// and zkrecipes exits 4 without waiting on the pipe.
func TestLossWhileCommandBlocksOnFullPipe(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	cpidFile := filepath.Join(dir, "child")
	script := fmt.Sprintf(`trap 'exit 0' TERM; echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; yes "a line of output that nobody reads"`, cpidFile)
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := exec.Command(builtCLI.get(t), "lock", "--servers", ens.ConnectString(), "--grace", "1s", root+"/job", "--", "sh", "-c", script)
	out, err := cmd.StdoutPipe() // never read
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	child := waitPid(t, cpidFile)
	node := lockNode(t, ens, root+"/job")
	time.Sleep(200 * time.Millisecond) // the pipe is full by now
	if err := ens.Conn(t).Delete(node, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitLost || alive(child) {
			b, _ := os.ReadFile(stderr.Name())
			t.Fatalf("zkrecipes: %v, command alive %v; stderr %q", err, alive(child), b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("zkrecipes did not end after the loss")
	}
}

// TestCtrlCStopsScriptThatRunsCLI checks promise 4 from the side of the
// shell script that runs zkrecipes: Ctrl-C on the terminal reaches CMD
// once, and should stop the script too, as it does for any command the
// script runs (flock, timeout, sudo, env...).
//
// What happens instead: the script goes on with its next command. A shell
// running a foreground command decides, on its end, whether Ctrl-C was for
// it too by whether the command died of SIGINT (bash's "wait and
// cooperative exit"); zkrecipes, whose CMD died of SIGINT, exits with
// status 130 instead, and the script's shell did not get the SIGINT
// itself either, since zkrecipes gave the terminal to CMD's group. So
//
//	for host in a b c; do zkrecipes lock /deploy -- deploy "$host"; done
//
// cannot be stopped with Ctrl-C: each press ends one deploy, and the next
// one starts. (The same holds for Ctrl-C while zkrecipes waits for the
// lock: it exits 130 rather than dying of the signal.) The fix is the
// usual one for wrappers: after releasing, reset SIGINT to its default and
// kill itself with it when CMD died of SIGINT (or zkrecipes was
// interrupted by it).
func TestCtrlCStopsScriptThatRunsCLI(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// A script as bash runs one: no job control, zkrecipes in its group.
	script := fmt.Sprintf(`for i in 1 2 3; do "$0" "$@" "echo \$\$ > %[1]s.$i.tmp && mv %[1]s.$i.tmp %[1]s.$i; exec sleep 300"; done; echo finished`, pidFile)
	r, master, screen := startOnTerminal(t, "bash", "-c", script, builtCLI.get(t), "lock", "--servers", ens.ConnectString(), root+"/job", "--", "sh", "-c")
	waitPid(t, pidFile+".1")
	if _, err := master.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(3 * time.Second):
		if _, err := os.Stat(pidFile + ".2"); err == nil {
			t.Fatalf("after Ctrl-C the script ran zkrecipes again; terminal:\n%s", screen.String())
		}
		t.Fatalf("the script still runs 3s after Ctrl-C; terminal:\n%s", screen.String())
	}
	if _, err := os.Stat(pidFile + ".2"); err == nil || strings.Contains(screen.String(), "finished") {
		t.Fatalf("after Ctrl-C the script went on; terminal:\n%s", screen.String())
	}
}

// TestQuitWhileWaitingExits131 checks promise 6, 128+n when a signal ends
// the wait, for SIGQUIT (Ctrl-\ on a terminal), which zkrecipes passes on
// to CMD like SIGINT once CMD runs.
//
// What happens instead: while waiting, nothing catches SIGQUIT, so Go's
// runtime handles it: a dump of every goroutine on stderr and exit status
// 2, which is zkrecipes' status for a bad command line. The waiting node
// is left to the session's expiry, as after a SIGKILL.
func TestQuitWhileWaitingExits131(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	path := root + "/job"
	holdLock(t, ens, path, "holder")
	r := startCLI(t, "lock", "--servers", ens.ConnectString(), path, "--", "true")
	nodesUnder(t, ens.Conn(t), path, 2)
	if err := r.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != exitSignal+int(syscall.SIGQUIT) {
		errOut := r.errOut()
		if len(errOut) > 300 {
			errOut = errOut[:300] + "..."
		}
		t.Fatalf("SIGQUIT while waiting: exit %d, want %d; stderr %q", code, exitSignal+int(syscall.SIGQUIT), errOut)
	}
}
