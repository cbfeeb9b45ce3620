//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

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

// TestSemaphoreLeaseDeletedSaysSo: when a lease is lost because someone
// deleted its node, the command is stopped and zkrecipes exits 4 saying the
// node was deleted, as lock does (lossCause, held.go) — the lease's own
// cause, not the session's state: an operator who deleted a stuck lease
// node on purpose must not be told to look at the network. The other lease
// is released.
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

// TestElectLeaderNodeDeletedStopsCommand: the leader's node deleted by
// someone while CMD runs; CMD gets SIGTERM, zkrecipes says the node was
// deleted and exits 4 once nothing of CMD runs, and another candidate can
// lead.
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

// TestQueueTakeLostPutsItemBack: the taken node deleted by someone while
// CMD works on the item; CMD gets SIGTERM, zkrecipes exits 4 once nothing
// of CMD runs, the item is not consumed although CMD then exits 0, and
// another worker takes it again.
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

// TestLossOfStoppedCommandThatIgnoresTerm: a command that ignores SIGTERM
// and has stopped itself (SIGSTOP) gets, on loss, SIGTERM and SIGCONT,
// runs on ignoring the SIGTERM, and gets SIGKILL after the grace;
// zkrecipes waits for that and exits 4. With --grace 0: SIGKILL at once.
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

// TestLossWhileCommandBlocksOnFullPipe: a command blocked writing to a
// stdout nobody reads (a full pipe) when the lock is lost ends, by SIGTERM
// or by the SIGKILL after the grace, and zkrecipes exits 4 without waiting
// on the pipe.
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
