//go:build linux

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCommandThatCannotBeExecutedExits126Or127: 126 when CMD cannot be
// run, 127 when it is not found, as a shell (and env, timeout, flock) says
// — also for a script whose interpreter does not exist and a file that is
// not an executable format. checkCommand only asks exec.LookPath, which
// finds any file with an execute bit; the execve happens later, in the
// guardian, once the lock is held, so the guardian's failure to execute
// must come back as 126 or 127, not as 1, the status of zkrecipes' own
// failures.
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

// TestQuitWhileWaitingExits131: a SIGQUIT (Ctrl-\ on a terminal) that ends
// the wait for the lock gives 128+3, as SIGINT and SIGTERM give 128+n.
// Left to Go's runtime, SIGQUIT would dump every goroutine and exit 2
// (zkrecipes' status for a bad command line), leaving the waiting node to
// the session's expiry.
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
