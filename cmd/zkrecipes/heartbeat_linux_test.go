//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCtrlZLongerThanHalfSessionTimeout checks that the guardian, which
// kills the group when zkrecipes is silent for half the session timeout,
// does not count while job control has stopped CMD: Ctrl-Z stops CMD and
// then zkrecipes (so no heartbeats), for longer than that half; fg
// continues both, and CMD goes on as if nothing happened.
func TestCtrlZLongerThanHalfSessionTimeout(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for job control")
	}
	ens := shared.Ensemble(t)
	// Stopped 3.5s: past the guardian's 3s, short of the 6s the server needs to
	// expire the session (--policy session: a suspension is no loss), with
	// 2.5s to spare for a loaded machine to continue the processes and for
	// zkrecipes to hear from the server again.
	j := stopJob(t, "sleep 3.5;", "--servers", ens.ConnectString(), "--session-timeout", "6s", "--policy", "session", ens.Root(t)+"/job")
	r, master, screen, got, status := j.r, j.master, j.screen, j.got, j.status
	zktest.Eventually(t, 10*time.Second, "fg", func() error {
		if b, _ := os.ReadFile(status); !strings.Contains(string(b), "ended") {
			time.Sleep(200 * time.Millisecond)
			if _, err := master.Write([]byte("hello\n")); err != nil {
				return err
			}
			return fmt.Errorf("status %q", b)
		}
		return nil
	})
	r.wait(t, 30*time.Second)
	if strings.Contains(screen.String(), "no heartbeat") {
		t.Fatalf("the guardian killed the stopped job; terminal:\n%s", screen.String())
	}
	if b, _ := os.ReadFile(got); strings.TrimSpace(string(b)) != "hello" {
		t.Fatalf("after fg the command read %q; terminal:\n%s", b, screen.String())
	}
}

// TestStoppedCLIDoesNotLeaveCommandBesideNextHolder: the core promise when
// zkrecipes itself is stopped (SIGSTOP: a debugger, an operator's kill
// -STOP, a stuck process-freezing tool) while CMD runs: zkrecipes no longer
// keeps its session, which expires, and another participant takes the
// lock. Watching for zkrecipes' death (socket EOF, parent death signal,
// parent change) does not see a stop; the guardian also kills the group
// when zkrecipes' heartbeats stop for half the session timeout, before the
// servers can expire the session.
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
