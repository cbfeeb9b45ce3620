//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
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
	// Stopped 2.5s: past the guardian's 2s, short of the 4s the server needs to
	// expire the session (--policy session: a suspension is no loss).
	j := stopJob(t, "sleep 2.5;", "--servers", ens.ConnectString(), "--session-timeout", "4s", "--policy", "session", ens.Root(t)+"/job")
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
