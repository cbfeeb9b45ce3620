package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	sharedrecipe "github.com/zkrecipes/zkrecipes/recipes/shared"
)

// TestCounterCommands: get, add (negative deltas too) and set, with and
// without --expect, in each encoding, with the bytes the peers read.
func TestCounterCommands(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	srv := ens.ConnectString()
	for _, tc := range []struct {
		encoding string
		at11     []byte
	}{
		{"int64", []byte{0, 0, 0, 0, 0, 0, 0, 11}},
		{"int32", []byte{0, 0, 0, 11}},
		{"text", []byte("11")},
	} {
		p := root + "/" + tc.encoding
		steps := []struct {
			args []string
			code int
			out  string
		}{
			{[]string{"get", p}, 0, "0\n"},
			{[]string{"add", p}, 0, "1\n"},
			{[]string{"add", p, "5"}, 0, "6\n"},
			{[]string{"add", p, "-2"}, 0, "4\n"},
			{[]string{"add", p, "-2", "--encoding", tc.encoding}, 0, "2\n"}, // a flag after the number
			{[]string{"set", p, "10"}, 0, "10\n"},
			{[]string{"set", "--expect", "3", p, "11"}, 3, ""},
			{[]string{"set", "--expect", "10", p, "11"}, 0, "11\n"},
			{[]string{"get", p}, 0, "11\n"},
		}
		for _, st := range steps {
			args := append([]string{"counter", st.args[0], "--servers", srv, "--encoding", tc.encoding}, st.args[1:]...)
			code, out, errOut := runCLI(t, args...)
			if code != st.code || out != st.out {
				t.Fatalf("%s: exit %d, stdout %q, stderr %q; want %d, %q", strings.Join(args, " "), code, out, errOut, st.code, st.out)
			}
			if code == 3 && !strings.Contains(errOut, "holds 10, not 3") {
				t.Fatalf("%s: stderr %q", strings.Join(args, " "), errOut)
			}
		}
		data, _, err := conn.Get(p)
		if err != nil || !bytes.Equal(data, tc.at11) {
			t.Fatalf("%s: node data %q, %v; want %q", tc.encoding, data, err, tc.at11)
		}
		if kids, _, _ := conn.Children(p); len(kids) != 0 {
			t.Fatalf("%s: markers left: %v", tc.encoding, kids)
		}
	}
	// A 4-byte count read as a long: corrupt, exit 1.
	code, _, errOut := runCLI(t, "counter", "get", "--servers", srv, root+"/int32")
	if code != 1 || !strings.Contains(errOut, "not int64 data") {
		t.Fatalf("get of a 4-byte node as int64: exit %d, %q", code, errOut)
	}
}

// TestCounterUsage: what is not a counter command exits 2.
func TestCounterUsage(t *testing.T) {
	for _, args := range [][]string{
		{"counter"},
		{"counter", "frob", "/c"},
		{"counter", "get"},
		{"counter", "get", "/c", "5"},
		{"counter", "add", "/c", "x"},
		{"counter", "add", "/c", "1", "2"},
		{"counter", "set", "/c"},
		{"counter", "set", "--expect", "x", "/c", "1"},
		{"counter", "get", "--encoding", "float", "/c"},
		{"counter", "add", "--lock", "rel", "/c"},
		{"counter", "get", "relative"},
		{"counter", "add", "/c", "99999999999999999999"},
	} {
		if code, out, errOut := runCLI(t, append(args, "--servers", "127.0.0.1:1")...); code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2", args, code, out, errOut)
		}
	}
}

// TestCounterOutcome: an add or a compare-and-set that may have applied
// exits 6 and says so; one that did not, 3.
func TestCounterOutcome(t *testing.T) {
	lost := fmt.Errorf("shared: add /c: %w", connection.ErrOutcomeUnknown)
	var ee *exitError
	if err := counterOutcome("add", "/c", 0, sharedrecipe.Result{}, lost); !errors.As(err, &ee) || ee.code != exitUnknown || !strings.Contains(ee.msg, "may or may not have applied") {
		t.Errorf("unknown outcome: %v", err)
	}
	if err := counterOutcome("add", "/c", 0, sharedrecipe.Result{OptimisticTries: 21}, nil); !errors.As(err, &ee) || ee.code != exitHeld || !strings.Contains(ee.msg, "21 tries") {
		t.Errorf("tries ran out: %v", err)
	}
	if err := counterOutcome("set", "/c", 3, sharedrecipe.Result{Pre: 4}, nil); !errors.As(err, &ee) || ee.code != exitHeld || !strings.Contains(ee.msg, "holds 4, not 3") {
		t.Errorf("expect mismatch: %v", err)
	}
	if err := counterOutcome("add", "/c", 0, sharedrecipe.Result{Succeeded: true}, nil); err != nil {
		t.Errorf("succeeded: %v", err)
	}
}

// TestCounterBinary: the built binary adds, prints and exits as the
// help says, and a failed compare-and-set exits 3.
func TestCounterBinary(t *testing.T) {
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/hits"
	bin := builtCLI.get(t)
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, append([]string{"counter"}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
	if code, out, errOut := run("add", "--servers", ens.ConnectString(), p, "41"); code != 0 || out != "41\n" {
		t.Fatalf("add: exit %d, %q, %q", code, out, errOut)
	}
	if code, out, errOut := run("add", "--servers", ens.ConnectString(), p); code != 0 || out != "42\n" {
		t.Fatalf("add: exit %d, %q, %q", code, out, errOut)
	}
	if code, out, errOut := run("set", "--servers", ens.ConnectString(), "--expect", "0", p, "1"); code != 3 || out != "" || !strings.Contains(errOut, "holds 42, not 0") {
		t.Fatalf("set --expect 0: exit %d, %q, %q", code, out, errOut)
	}
}
