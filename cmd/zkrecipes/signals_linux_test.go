//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
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
