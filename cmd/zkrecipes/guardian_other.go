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
	"io"
	"os/exec"
	"syscall"
	"time"
)

// runGuardianIfAsked does nothing: there is no guardian here.
func runGuardianIfAsked() {}

// startGroup starts CMD as the leader of a new process group, made the
// terminal's foreground group when tty >= 0.
func startGroup(cmdArgs, env []string, stdin io.Reader, stdout, stderr io.Writer, tty int) (*cmdGroup, error) {
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if tty >= 0 {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, tty
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	events := make(chan groupEvent, 1)
	go func() {
		defer close(events)
		events <- groupEvent{ended: true, status: exitStatus(cmd.Wait())}
	}()
	return &cmdGroup{
		pgid:   cmd.Process.Pid,
		events: events,
		stop: func() {
			for range events {
			}
		},
	}, nil
}

// running reports whether the group has a process left.
func (g *cmdGroup) running() bool {
	return !errors.Is(syscall.Kill(-g.pgid, 0), syscall.ESRCH)
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
