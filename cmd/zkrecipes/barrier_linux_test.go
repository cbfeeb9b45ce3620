//go:build linux

package main

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestBarrierEnterBinary: the built binary waiting in enter ends on
// SIGTERM with 143, its member node deleted (a timed-out or interrupted
// member is not counted by the others).
func TestBarrierEnterBinary(t *testing.T) {
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/double"
	r := startCLI(t, "barrier", "enter", "--servers", ens.ConnectString(), "--members", "2", p)
	conn := ens.Conn(t)
	zktest.Eventually(t, 30*time.Second, "the member's node", func() error {
		if kids, _, _ := conn.Children(p); len(kids) != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 30*time.Second); code != 143 {
		t.Fatalf("exit %d, want 143", code)
	}
	if kids, _, _ := conn.Children(p); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}
}
