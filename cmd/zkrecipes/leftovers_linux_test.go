//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestLeftoverWithoutMainThreadGetsItsGrace: what CMD leaves running in its
// group gets SIGTERM, then SIGKILL after --grace, before the lock is
// released — also a leftover whose main thread has ended (pthread_exit, or
// the exit system call, in main) while another thread works on; it handles
// SIGTERM by carrying on. /proc/PID/stat of such a process shows its main
// thread's state, Z, so the group counts as running while any of its
// threads is not a zombie (/proc/PID/task/TID/stat).
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

// TestKilledGuardianStillTerminatesGroup: SIGKILL to the guardian alone,
// the limit its comment states. CMD dies with it (PR_SET_PDEATHSIG),
// zkrecipes says so and exits 1, and a grandchild that ignores SIGTERM is
// killed after the grace, before the lock is released.
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
