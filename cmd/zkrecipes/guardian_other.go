//go:build !linux

package main

// Without Linux's PR_SET_PDEATHSIG, child subreapers and /proc there is
// no guardian: CMD leads its own process group and zkrecipes signals the
// group as on Linux, but if zkrecipes is killed with SIGKILL the group
// lives on, and CMD's stops are not seen (no job control of the pair).
// zkrecipes waits for the group with kill(-pgid, 0), so zombies of the
// group delay the end until their parent (init) reaps them, and once CMD
// is reaped a signal to the group can in theory reach a new group that
// reused the number after the last member ended.

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// runGuardianIfAsked does nothing: there is no guardian here.
func runGuardianIfAsked() {}

// startGroup prepares CMD, which start(true) starts as the leader of a
// new process group, made the terminal's foreground group when tty >= 0.
// There is no guardian to beat to: session is not used.
func startGroup(cmdArgs, env []string, stdin io.Reader, stdout, stderr io.Writer, tty int, session time.Duration) (*cmdGroup, error) {
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if tty >= 0 {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, tty
	}
	events := make(chan groupEvent, 2)
	events <- groupEvent{ready: true}
	g := &cmdGroup{events: events}
	g.start = func(run bool) {
		if !run {
			close(events)
			return
		}
		if err := cmd.Start(); err != nil {
			code := exitCannotRun
			if errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT) {
				code = exitNotFound
			}
			events <- groupEvent{ended: true, status: &exitError{code, fmt.Sprintf("%s: cannot run: %v", cmdArgs[0], err)}}
			close(events)
			return
		}
		g.pgid = cmd.Process.Pid
		events <- groupEvent{started: true}
		go func() {
			defer close(events)
			events <- groupEvent{ended: true, status: exitStatus(cmd.Wait())}
		}()
	}
	g.stop = func() {
		for range events {
		}
	}
	return g, nil
}

// running reports whether the group has a process left.
func (g *cmdGroup) running() bool {
	return g.pgid > 0 && !errors.Is(syscall.Kill(-g.pgid, 0), syscall.ESRCH)
}

// groupOrphaned is never asked: without the guardian CMD's stops are not seen.
func groupOrphaned() bool { return true }

// exitStatus turns CMD's end into zkrecipes' exit: its code, or
// 128+signal when a signal ended it, as shells report.
func exitStatus(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &signalExit{sig: ws.Signal()}
	}
	return &exitError{code: ee.ExitCode()}
}
