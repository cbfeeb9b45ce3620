//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// testHold is a hold that the test ends.
type testHold struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (h *testHold) Token() int64             { return 1 }
func (h *testHold) Node() string             { return "/test/lock-0000000001" }
func (h *testHold) Done() <-chan struct{}    { return h.ctx.Done() }
func (h *testHold) Context() context.Context { return h.ctx }

// TestLossRightAfterStartReachesCommand checks that a hold lost right
// after zkrecipes told the guardian to start CMD, before the guardian
// said CMD runs, still ends CMD: zkrecipes holds its SIGTERM back until
// "run" (a signal before it would find only the guardian, which drops
// it), then sends it. The group here is a fake whose "guardian" reports
// start when the test says; its CMD already runs, so a SIGTERM sent too
// early would show.
func TestLossRightAfterStartReachesCommand(t *testing.T) {
	dir := t.TempDir()
	trapped, termed := filepath.Join(dir, "trapped"), filepath.Join(dir, "termed")
	script := fmt.Sprintf(`trap 'echo TERM >> %[2]s; exit 0' TERM; touch %[1]s; while :; do sleep 0.02; done`, trapped, termed)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	h := &testHold{ctx, cancel}
	events := make(chan groupEvent, 4)
	startSaid := make(chan bool, 1)
	var cmd *exec.Cmd
	defer func(old func([]string, []string, io.Reader, io.Writer, io.Writer, int, time.Duration) (*cmdGroup, error)) {
		newGroup = old
	}(newGroup)
	newGroup = func(cmdArgs, env []string, stdin io.Reader, stdout, stderr io.Writer, tty int, session time.Duration) (*cmdGroup, error) {
		cmd = exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		for start := time.Now(); ; time.Sleep(5 * time.Millisecond) { // its trap is set
			if _, err := os.Stat(trapped); err == nil {
				break
			}
			if time.Since(start) > 10*time.Second {
				return nil, errors.New("sh did not set its trap")
			}
		}
		waited := make(chan struct{})
		go func() {
			defer close(events)
			err := cmd.Wait()
			<-waited // reported after "run"
			var status error
			if err != nil {
				status = &exitError{code: exitFailure, msg: err.Error()}
			}
			events <- groupEvent{ended: true, status: status}
		}()
		events <- groupEvent{ready: true}
		return &cmdGroup{
			pgid:   cmd.Process.Pid,
			events: events,
			start: func(run bool) {
				startSaid <- run
				cancel(errors.New("lost right after start"))
				go func() {
					time.Sleep(300 * time.Millisecond) // the guardian is slow to start CMD
					events <- groupEvent{started: true}
					close(waited)
				}()
			},
			stop: func() {
				for range events {
				}
			},
		}, nil
	}
	errc := make(chan error, 1)
	go func() {
		errc <- runUnder(h, underRun{name: "lock", what: "lock /test", cmdArgs: []string{"sh"}, grace: 5 * time.Second}, io.Discard, io.Discard)
	}()
	if run := <-startSaid; !run {
		t.Fatal("zkrecipes did not say start while the hold was held")
	}
	time.Sleep(150 * time.Millisecond) // before "run"
	if _, err := os.Stat(termed); err == nil {
		t.Fatal("zkrecipes signalled the group before the guardian said CMD runs")
	}
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("runUnder did not end: CMD never got the SIGTERM")
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitLost {
		t.Fatalf("runUnder: %v, want the loss (exit %d)", err, exitLost)
	}
	if b, _ := os.ReadFile(termed); string(b) != "TERM\n" {
		t.Fatalf("CMD got %q, want one SIGTERM", b)
	}
}

// TestGuardianLinesAreDistinct: each line the guardian writes means one
// thing — a signal it got while waiting to start CMD ("signal N", which
// aborts the start) is not CMD's death by a signal ("killed N").
func TestGuardianLinesAreDistinct(t *testing.T) {
	if ev, ok := parseGuardianLine([]byte("signal 2")); !ok || ev.signal != syscall.SIGINT || ev.ended {
		t.Fatalf("signal 2: %+v, %v", ev, ok)
	}
	ev, ok := parseGuardianLine([]byte("killed 15"))
	se, isSig := ev.status.(*signalExit)
	if !ok || !ev.ended || ev.signal != 0 || !isSig || se.sig != syscall.SIGTERM {
		t.Fatalf("killed 15: %+v, %v", ev, ok)
	}
	if ev, ok := parseGuardianLine([]byte("exit 7")); !ok || !ev.ended {
		t.Fatalf("exit 7: %+v, %v", ev, ok)
	}
}
