package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestElectRunsCommandWhileLeading(t *testing.T) {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/leader"
	code, out, errOut := runCLI(t, "elect", "--servers", ens.ConnectString(), "--id", "first", path, "--",
		"sh", "-c", `echo "$ZKRECIPES_LEADER_ID $ZKRECIPES_FENCING_TOKEN"`)
	if code != 0 || !strings.HasPrefix(out, "first ") {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, errOut)
	}
	// While a Go candidate leads, elect waits; inspect shows both.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := election.New(c, path, "go-leader")
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "elect", "--servers", ens.ConnectString(), "--timeout", "500ms", path, "--", "true")
	if code != 124 || !strings.Contains(errOut, "not elected") {
		t.Fatalf("elect while another leads: exit %d, stderr %q", code, errOut)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), path)
	if code != 0 || !strings.Contains(out, "leader") || !strings.Contains(out, "go-leader") {
		t.Fatalf("inspect: exit %d, %q", code, out)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestElectWithPreemptGivesWayToHigherPriority: elect --preempt leads,
// and gives way to a Go candidate of higher priority: the command is
// stopped and elect exits 4 saying so; the Go candidate then leads. A
// priority out of range is refused.
func TestElectWithPreemptGivesWayToHigherPriority(t *testing.T) {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/leader"
	if code, _, errOut := runCLI(t, "elect", "--servers", ens.ConnectString(), "--priority", "-1", path, "--", "true"); code != 2 || !strings.Contains(errOut, "--priority -1") {
		t.Fatalf("elect --priority -1: exit %d, stderr %q", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	// The command writes its node's path once it runs: the Go candidate
	// joins only then, so that elect gives way while its command runs.
	started := filepath.Join(t.TempDir(), "node")
	go func() {
		code, out, errOut := runCLI(t, "elect", "--servers", ens.ConnectString(), "--id", "cli", "--priority", "1", "--preempt", "300ms",
			path, "--", "sh", "-c", `echo "$ZKRECIPES_LOCK_NODE" > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 60`, started)
		done <- result{code, out, errOut}
	}()
	e, err := election.New(c, path, "go-high", election.WithPriority(5))
	if err != nil {
		t.Fatal(err)
	}
	var node []byte
	zktest.Eventually(t, 30*time.Second, "elect's command runs", func() error {
		node, err = os.ReadFile(started)
		return err
	})
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.code != 4 || !strings.Contains(r.errOut, "higher priority") || !strings.Contains(string(node), "-priority-1-latch-") {
			t.Fatalf("elect after giving way: exit %d, the command's node %q, stderr %q", r.code, node, r.errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("elect did not end after giving way")
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestQueuePutTakeInspect(t *testing.T) {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/work"
	srv := ens.ConnectString()
	if code, _, errOut := runCLI(t, "queue", "put", "--servers", srv, path, "a", "b"); code != 0 {
		t.Fatalf("put: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "queue", "put", "--servers", srv, "--priority", "1", path, "urgent"); code != 0 {
		t.Fatalf("put: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "queue", "put", "--servers", srv, "--priority", "1000", path, "x"); code != 1 || !strings.Contains(errOut, "invalid priority") {
		t.Fatalf("bad priority: exit %d, %q", code, errOut)
	}
	code, out, _ := runCLI(t, "inspect", "--servers", srv, path)
	if code != 0 || !strings.Contains(out, "3 item(s), 0 taken") {
		t.Fatalf("inspect: exit %d, %q", code, out)
	}
	if code, out, _ := runCLI(t, "queue", "take", "--servers", srv, path); code != 0 || out != "urgent\n" {
		t.Fatalf("take: exit %d, %q", code, out)
	}
	// A failing command puts its item back at its place.
	code, out, _ = runCLI(t, "queue", "take", "--servers", srv, path, "--", "sh", "-c", `cat; echo " $ZKRECIPES_ITEM"; exit 3`)
	if code != 3 || !strings.HasPrefix(out, "a entry-100-") {
		t.Fatalf("take with a failing command: exit %d, %q", code, out)
	}
	if code, out, _ := runCLI(t, "queue", "take", "--servers", srv, path, "--", "cat"); code != 0 || out != "a" {
		t.Fatalf("take after the failure: exit %d, %q, want a again", code, out)
	}
	if code, out, _ := runCLI(t, "queue", "take", "--servers", srv, path); code != 0 || out != "b\n" {
		t.Fatalf("take: exit %d, %q", code, out)
	}
	if code, _, errOut := runCLI(t, "queue", "take", "--servers", srv, "--try", path); code != 3 || !strings.Contains(errOut, "no item") {
		t.Fatalf("take --try on an empty queue: exit %d, %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "queue", "frob"); code != 2 {
		t.Fatalf("queue frob: exit %d, want 2", code)
	}
}
