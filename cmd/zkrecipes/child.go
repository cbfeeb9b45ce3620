package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// forwarded are the signals zkrecipes passes on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// underRun is a command to run under a hold.
type underRun struct {
	name    string // the subcommand, for messages: "lock"
	what    string // the hold, for messages: "lock /jobs/nightly"
	cmdArgs []string
	grace   time.Duration
	env     []string  // more environment, besides the token and the node
	stdin   io.Reader // nil: zkrecipes' own
}

// runUnder runs the command while h is held and returns its exit status,
// or a failure when the hold is lost first.
func runUnder(m hold, r underRun, out, errOut io.Writer) error {
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, forwarded...)
	defer signal.Stop(sigc)

	cmdArgs, grace, what := r.cmdArgs, r.grace, r.what
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, out, errOut
	if r.stdin != nil {
		cmd.Stdin = r.stdin
	}
	cmd.Env = append(os.Environ(),
		"ZKRECIPES_FENCING_TOKEN="+strconv.FormatInt(m.Token(), 10),
		"ZKRECIPES_LOCK_NODE="+m.Node(),
	)
	cmd.Env = append(cmd.Env, r.env...)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	lost := m.Done()
	var killTimer <-chan time.Time
	var lostReason error
	for {
		select {
		case err := <-exited:
			if lostReason != nil {
				return &exitError{exitFailure, fmt.Sprintf("%v; %s was stopped", lostReason, cmdArgs[0])}
			}
			return exitStatus(err)
		case sig := <-sigc:
			_ = cmd.Process.Signal(sig)
		case <-lost:
			lost = nil
			lostReason = fmt.Errorf("%s lost: %v", what, context.Cause(m.Context()))
			fmt.Fprintf(errOut, "zkrecipes %s: %v; sending SIGTERM to %s\n", r.name, lostReason, cmdArgs[0])
			_ = cmd.Process.Signal(syscall.SIGTERM)
			killTimer = time.After(grace)
		case <-killTimer:
			fmt.Fprintf(errOut, "zkrecipes %s: %s still running %v after SIGTERM; sending SIGKILL\n", r.name, cmdArgs[0], grace)
			_ = cmd.Process.Kill()
		}
	}
}

// exitStatus turns the command's end into zkrecipes' exit: its code, or
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
		return &exitError{code: 128 + int(ws.Signal()), msg: ""}
	}
	return &exitError{code: ee.ExitCode(), msg: ""}
}
