//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	root := ens.Root(t)
	dir := t.TempDir()
	cpidFile, ready, got, status := filepath.Join(dir, "child"), filepath.Join(dir, "ready"), filepath.Join(dir, "got"), filepath.Join(dir, "status")
	cmdScript := fmt.Sprintf(`echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; touch %[2]s; read line; echo "$line" > %[3]s`, cpidFile, ready, got)
	// Stopped 2.5s: past the guardian's 2s, short of the 4s the server needs to
	// expire the session (--policy session: a suspension is no loss).
	shell := fmt.Sprintf(`set -m; "$0" "$@"; echo "stopped $?" > %[1]s.tmp && mv %[1]s.tmp %[1]s; sleep 2.5; fg; echo "ended $?" >> %[1]s`, status)
	r, master, screen := startOnTerminal(t, "bash", "-c", shell, builtCLI.get(t), "lock", "--servers", ens.ConnectString(), "--session-timeout", "4s", "--policy", "session", root+"/job", "--", "sh", "-c", cmdScript)
	waitPid(t, cpidFile)
	zktest.Eventually(t, 10*time.Second, "the command is ready to read", func() error {
		_, err := os.Stat(ready)
		return err
	})
	if _, err := master.Write([]byte{26}); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the shell sees the job stopped", func() error {
		_, err := os.Stat(status)
		return err
	})
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
