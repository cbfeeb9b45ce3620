package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	runGuardianIfAsked() // the in-process commands re-execute the test binary as their guardian
	goleak.VerifyTestMain(shared.Wrap(builtCLI.wrap(m)))
}

func runCLI(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code = run(ctx, args, &o, &e)
	return code, o.String(), e.String()
}

func TestUsageAndErrors(t *testing.T) {
	if code, out, errOut := runCLI(t); code != 2 || out != "" || !strings.Contains(errOut, "Commands:") {
		t.Fatalf("no arguments: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "--help"); code != 0 || !strings.Contains(out, "demo") {
		t.Fatalf("--help: code %d, output %q", code, out)
	}
	if code, _, errOut := runCLI(t, "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: code %d, stderr %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "demo", "--no-such-flag"); code != 2 {
		t.Fatalf("bad flag: code %d, want 2", code)
	}
	if code, out, _ := runCLI(t, "demo", "--help"); code != 0 || !strings.Contains(out, "-servers") {
		t.Fatalf("demo --help: code %d, output %q", code, out)
	}
	if code, _, errOut := runCLI(t, "bench"); code != 2 || !strings.Contains(errOut, `unknown command "bench"`) {
		t.Fatalf("bench, now cmd/zkbench: code %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "demo", "--servers", "127.0.0.1:1", "--workers", "0"); code != 1 || !strings.Contains(errOut, "--workers") {
		t.Fatalf("demo with no workers: code %d, stderr %q", code, errOut)
	}
}

// TestDemo runs the demo against a test ensemble: workers served in order
// with increasing tokens, and the herd comparison.
func TestDemo(t *testing.T) {
	ens := shared.Ensemble(t)
	code, out, errOut := runCLI(t, "demo", "--servers", ens.ConnectString(), "--workers", "3", "--waiters", "4")
	if code != 0 {
		t.Fatalf("demo exited %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"worker 1 holds the lock", "worker 2 holds the lock", "worker 3 holds the lock",
		"naive the first release woke", "mutex the first release woke",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "NOT INCREASING") {
		t.Errorf("fencing tokens did not increase:\n%s", out)
	}
	if strings.Index(out, "worker 1 holds") > strings.Index(out, "worker 2 holds") || strings.Index(out, "worker 2 holds") > strings.Index(out, "worker 3 holds") {
		t.Errorf("workers not served in queue order:\n%s", out)
	}
}
