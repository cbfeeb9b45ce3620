package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestBarrierCommands: set, wait (with --timeout: 124), remove, wait and
// remove again on a barrier that is down.
func TestBarrierCommands(t *testing.T) {
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/gate"
	srv := ens.ConnectString()
	for _, st := range []struct {
		args []string
		code int
	}{
		{[]string{"wait", p}, 0},
		{[]string{"set", p}, 0},
		{[]string{"set", p}, 0},
		{[]string{"wait", "--timeout", "300ms", p}, 124},
	} {
		args := append([]string{"barrier", st.args[0], "--servers", srv}, st.args[1:]...)
		if code, out, errOut := runCLI(t, args...); code != st.code || out != "" {
			t.Fatalf("%s: exit %d, %q, %q; want %d", strings.Join(args, " "), code, out, errOut, st.code)
		}
	}
	waited := make(chan int, 1)
	go func() {
		code, _, _ := runCLI(t, "barrier", "wait", "--servers", srv, p)
		waited <- code
	}()
	conn := ens.Conn(t)
	zktest.Eventually(t, 20*time.Second, "a watch on the barrier", func() error {
		// wchp lists the watched paths; a cheaper sign is enough: the
		// waiter's Wait sets a data watch, which the server counts.
		out, err := zktest.FourLetter(ens.Servers()[0], "wchp", 5*time.Second)
		if err != nil || !strings.Contains(out, p) {
			return errors.New("not yet")
		}
		return nil
	})
	select {
	case code := <-waited:
		t.Fatalf("wait returned %d while the barrier was up", code)
	default:
	}
	if code, _, errOut := runCLI(t, "barrier", "remove", "--servers", srv, p); code != 0 {
		t.Fatalf("remove: exit %d, %q", code, errOut)
	}
	select {
	case code := <-waited:
		if code != 0 {
			t.Fatalf("wait: exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not end after remove")
	}
	if ok, _, _ := conn.Exists(p); ok {
		t.Fatal("the barrier is still up")
	}
	if code, _, _ := runCLI(t, "barrier", "remove", "--servers", srv, p); code != 0 {
		t.Fatalf("remove of a barrier that is down: exit %d", code)
	}
}

// TestBarrierEnterCommand: three members meet — two run CMD with their
// node in ZKRECIPES_BARRIER_NODE (and no fencing token), one without CMD
// prints its node and "left" — and nothing is left behind; alone, enter
// gives up at --timeout with 124 and deletes its node; leave waits until
// the members are out.
func TestBarrierEnterCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/double"
	srv := ens.ConnectString()
	dir := t.TempDir()
	type result struct {
		code      int
		out, errs string
	}
	results := make(chan result, 3)
	for i := range 2 {
		f := filepath.Join(dir, string(rune('a'+i)))
		go func() {
			code, out, errOut := runCLI(t, "barrier", "enter", "--servers", srv, "--members", "3", p, "--",
				"sh", "-c", `echo "$ZKRECIPES_BARRIER_NODE ${ZKRECIPES_FENCING_TOKEN:-none}" > `+f)
			results <- result{code, out, errOut}
		}()
	}
	code, out, errOut := runCLI(t, "barrier", "enter", "--servers", srv, "--members", "3", p)
	if code != 0 || !strings.HasPrefix(out, "entered "+p+": node "+p+"/") || !strings.HasSuffix(out, "left "+p+"\n") {
		t.Fatalf("enter without CMD: exit %d, %q, %q", code, out, errOut)
	}
	for range 2 {
		r := <-results
		if r.code != 0 {
			t.Fatalf("enter -- CMD: exit %d, %q, %q", r.code, r.out, r.errs)
		}
	}
	for i := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, string(rune('a'+i))))
		if err != nil || !strings.HasPrefix(string(b), p+"/") || !strings.HasSuffix(string(b), " none\n") {
			t.Fatalf("CMD's environment: %q, %v", b, err)
		}
	}
	conn := ens.Conn(t)
	if kids, _, _ := conn.Children(p); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}

	// Alone: --timeout.
	if code, _, errOut := runCLI(t, "barrier", "enter", "--servers", srv, "--members", "2", "--timeout", "300ms", p); code != 124 || !strings.Contains(errOut, "fewer than 2 members") {
		t.Fatalf("enter alone with --timeout: exit %d, %q", code, errOut)
	}
	if kids, _, _ := conn.Children(p); len(kids) != 0 {
		t.Fatalf("a timed-out enter left %v", kids)
	}

	// leave: at once with nobody in; 124 while a member is in.
	if code, _, errOut := runCLI(t, "barrier", "leave", "--servers", srv, p); code != 0 {
		t.Fatalf("leave with nobody in: exit %d, %q", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := barrier.NewDouble(c, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCLI(t, "barrier", "leave", "--servers", srv, "--timeout", "300ms", p); code != 124 {
		t.Fatalf("leave with a member in: exit %d", code)
	}
	if err := d.Leave(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestBarrierUsage: what is not a barrier command exits 2.
func TestBarrierUsage(t *testing.T) {
	for _, args := range [][]string{
		{"barrier"},
		{"barrier", "frob", "/b"},
		{"barrier", "wait"},
		{"barrier", "set", "/b", "extra"},
		{"barrier", "set", "b"},
		{"barrier", "enter", "/b"},
		{"barrier", "enter", "--members", "0", "/b"},
		{"barrier", "leave"},
		{"barrier", "wait", "--timeout", "-1s", "/b"},
	} {
		if code, _, errOut := runCLI(t, append(args, "--servers", "127.0.0.1:1")...); code != 2 {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}
