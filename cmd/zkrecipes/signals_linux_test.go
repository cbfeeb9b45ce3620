//go:build linux

package main

import (
	"context"
	"errors"
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

// TestHangupSentOnLiveTerminalIsPassedOn: a kill -HUP of zkrecipes while
// CMD's group has a terminal that has not hung up reaches CMD once (only
// a hangup's SIGHUP is left to the kernel: see hungUpOnCommand).
func TestHangupSentOnLiveTerminalIsPassedOn(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	cpidFile, count, stop := filepath.Join(dir, "child"), filepath.Join(dir, "count"), filepath.Join(dir, "stop")
	script := fmt.Sprintf(`trap 'echo HUP >> %[2]s' HUP; echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s; while [ ! -e %[3]s ]; do sleep 0.05; done`, cpidFile, count, stop)
	r, master, screen := startOnTerminal(t, "sh", "-c", `"$0" "$@"`, builtCLI.get(t), "lock", "--servers", ens.ConnectString(), root+"/job", "--", "sh", "-c", script)
	child := waitPid(t, cpidFile)
	st, err := readProcStat(child)
	if err != nil {
		t.Fatal(err)
	}
	if fg := foregroundGroup(t, master); fg != st.pgrp {
		t.Fatalf("foreground group %d, the command's %d", fg, st.pgrp)
	}
	guardian, err := readProcStat(st.ppid)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(guardian.ppid, syscall.SIGHUP); err != nil { // zkrecipes
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "the command counts a SIGHUP", func() error {
		if b, _ := os.ReadFile(count); !strings.Contains(string(b), "HUP") {
			return errors.New("not yet")
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // time for a second one, if any
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, screen.String())
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "HUP") != 1 {
		t.Fatalf("the command got %d SIGHUPs, want 1", strings.Count(string(b), "HUP"))
	}
}

// TestTerminalHangupReachesCommandOnce: SIGHUP, the other signal a terminal
// sends, reaches CMD once when the terminal of an interactive shell hangs
// up (an ssh connection drops) while zkrecipes runs CMD as the shell's
// foreground job — as Ctrl-C does.
//
// Two SIGHUPs are on their way: CMD's group is the terminal's foreground
// group, so when the session leader (bash) exits after the hangup, the
// kernel sends SIGHUP to that group itself (tty_old_pgrp); and bash, on its
// SIGHUP, sends SIGHUP to its jobs, zkrecipes among them. zkrecipes must not
// pass that one on too: a command that reloads, or counts, on SIGHUP would
// do it twice. (The command here handles each signal as it comes, in
// Python; a shell's trap, slower to run, may merge two that come close
// together.)
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

// TestSecondSignalWhileCommandRunsIsPassedOn: signals.go's "a second signal
// ends zkrecipes at once" holds only while waiting. While CMD runs, a
// second SIGINT is passed on like the first (CMD gets two), zkrecipes does
// not end, exits with CMD's status (0, though signals came), and releases
// the lock at once rather than leaving it to the session's expiry.
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

// TestSignalOrKillWhileWaitingStartsNothing: before CMD, SIGTERM while
// waiting for the lock exits 143 and takes the waiting node away at once;
// SIGKILL while waiting leaves the node to the session's expiry, and no CMD
// ever starts, though the lock comes free meanwhile.
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

// TestCtrlCStopsScriptThatRunsCLI: Ctrl-C on the terminal reaches CMD once,
// and stops the shell script that runs zkrecipes too, as it does for any
// command the script runs (flock, timeout, sudo, env...), so that
//
//	for host in a b c; do zkrecipes lock /deploy -- deploy "$host"; done
//
// stops at the first press rather than ending one deploy and starting the
// next. A shell running a foreground command decides, on its end, whether
// Ctrl-C was for it too by whether the command died of SIGINT (bash's "wait
// and cooperative exit"), and the script's shell does not get the SIGINT
// itself, since zkrecipes gave the terminal to CMD's group: so when CMD
// died of SIGINT, zkrecipes releases the hold and then dies of SIGINT
// itself, rather than exiting 130 (docs/cli.md: Signals and the terminal).
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
