package main

import (
	"context"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestHelpEverywhere: --help, -h and "help CMD" print a command's help to
// stdout and exit 0, for every command and subcommand.
func TestHelpEverywhere(t *testing.T) {
	for _, words := range [][]string{
		{"lock"}, {"semaphore"}, {"elect"}, {"queue"}, {"queue", "put"}, {"queue", "take"},
		{"inspect"}, {"watch"}, {"exporter"}, {"counter"}, {"counter", "get"}, {"counter", "add"}, {"counter", "set"},
		{"register"}, {"discover"},
		{"barrier"}, {"barrier", "set"}, {"barrier", "remove"}, {"barrier", "wait"}, {"barrier", "enter"}, {"barrier", "leave"},
		{"demo"}, {"dev"}, {"version"}, {"completion"}, {"help"},
	} {
		name := strings.Join(words, " ")
		code, help, errOut := runCLI(t, append(append([]string{}, words...), "--help")...)
		if code != 0 || errOut != "" || !strings.HasPrefix(help, "Usage:") && !strings.HasPrefix(help, "zkrecipes — ") {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", name, code, help, errOut)
			continue
		}
		code, out, errOut := runCLI(t, append([]string{"help"}, words...)...)
		if code != 0 || errOut != "" || out != help {
			t.Errorf("help %s: exit %d, stderr %q, stdout differs from --help's:\n%s\n---\n%s", name, code, errOut, out, help)
		}
		if code, out, _ := runCLI(t, append(append([]string{}, words...), "-h")...); code != 0 || out != help {
			t.Errorf("%s -h: exit %d", name, code)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		if code, out, errOut := runCLI(t, args...); code != 0 || errOut != "" || !strings.Contains(out, "Commands:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// The commands that hold say what their exit statuses mean.
	for _, name := range []string{"lock", "semaphore", "elect", "queue take"} {
		_, out, _ := runCLI(t, append(strings.Fields(name), "--help")...)
		for _, want := range []string{"Exit status:", "124", "126", "127", "128+n", "130 for SIGINT"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help lacks %q", name, want)
			}
		}
		if strings.Contains(out, "standard-policy") {
			t.Errorf("%s --help shows the deprecated --standard-policy", name)
		}
	}
	if code, _, errOut := runCLI(t, "help", "frob"); code != 2 || !strings.Contains(errOut, `unknown command "frob"`) {
		t.Errorf("help frob: exit %d, %q", code, errOut)
	}
}

// TestUsageAligned: the summaries of the command list start in one column.
func TestUsageAligned(t *testing.T) {
	_, out, _ := runCLI(t, "--help")
	_, list, _ := strings.Cut(out, "Commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	col := -1
	for _, line := range strings.Split(list, "\n") {
		name := strings.Fields(line)[0]
		at := strings.Index(line, name) + len(name)
		at += len(line[at:]) - len(strings.TrimLeft(line[at:], " "))
		if col >= 0 && at != col {
			t.Fatalf("summaries not aligned:\n%s", list)
		}
		col = at
	}
	if !strings.Contains(list, "completion  print") {
		t.Fatalf("the longest name is not followed by two spaces:\n%s", list)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "zkrecipes ") || !strings.Contains(out, "built with go") {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errOut)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runCLI(t, "completion", shell)
		if code != 0 || errOut != "" {
			t.Fatalf("completion %s: exit %d, %q", shell, code, errOut)
		}
		// Commands, queue's subcommands, each command's own flags and
		// the common ones, all from the flag sets.
		for _, want := range []string{"lock", "semaphore", "elect", "inspect", "put", "take", "conflict-exit-code", "leases", "selector", "priority", "json", "servers", "policy"} {
			if !strings.Contains(out, want) {
				t.Errorf("completion %s lacks %q", shell, want)
			}
		}
		if strings.Contains(out, "standard-policy") {
			t.Errorf("completion %s offers the deprecated --standard-policy", shell)
		}
		if _, err := exec.LookPath(shell); err == nil {
			script := filepath.Join(t.TempDir(), "completion")
			if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command(shell, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n on its completion: %v\n%s", shell, err, b)
			}
		}
	}
	// Bash offers what the words before call for.
	code, script, _ := runCLI(t, "completion", "bash")
	if _, err := exec.LookPath("bash"); err != nil || code != 0 {
		return
	}
	for _, tc := range []struct{ words, want string }{
		{`zkrecipes ""`, "lock semaphore elect queue inspect watch exporter counter register discover barrier demo dev version completion help"},
		{`zkrecipes --servers h:1 lo`, "lock"},
		{`zkrecipes lock --t`, "--timeout --try"},
		{`zkrecipes queue ""`, "put take"},
		{`zkrecipes queue put --p`, "--priority"},
		{`zkrecipes completion ""`, "bash zsh fish"},
	} {
		cmd := exec.Command("bash", "-c", script+`
COMP_WORDS=(`+tc.words+`); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _zkrecipes; echo "${COMPREPLY[*]}"`)
		b, err := cmd.Output()
		if got := strings.TrimSpace(string(b)); err != nil || got != tc.want {
			t.Errorf("bash completion of %s: %q (%v), want %q", tc.words, got, err, tc.want)
		}
	}
	if code, _, _ := runCLI(t, "completion"); code != 2 {
		t.Errorf("completion without a shell: exit %d", code)
	}
	if code, _, _ := runCLI(t, "completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: exit %d", code)
	}
}

// TestUsageErrors: a bad command line is refused at once, before any
// connection, with exit 2, a message on stderr and nothing on stdout.
func TestUsageErrors(t *testing.T) {
	const srv = "127.0.0.1:1" // never reached: the checks come first
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lock", "--servers", srv, "--timeout", "-1s", "/x", "--", "true"}, "--timeout -1s: a duration cannot be negative"},
		{[]string{"lock", "--servers", srv, "--grace", "-1s", "/x", "--", "true"}, "--grace -1s"},
		{[]string{"lock", "--servers", srv, "--session-timeout", "-5s", "/x", "--", "true"}, "--session-timeout -5s"},
		{[]string{"--connect-timeout", "-1ms", "lock", "--servers", srv, "/x", "--", "true"}, "--connect-timeout -1ms"},
		{[]string{"queue", "take", "--servers", srv, "--timeout", "-2s", "/q"}, "--timeout -2s"},
		{[]string{"lock", "--servers", srv, "--try", "--timeout", "1s", "/x", "--", "true"}, "--try does not wait"},
		{[]string{"semaphore", "--servers", srv, "--max", "2", "--try", "--timeout", "1s", "/s", "--", "true"}, "--try does not wait"},
		{[]string{"queue", "take", "--servers", srv, "--try", "--timeout", "1s", "/q"}, "--try does not wait"},
		{[]string{"lock", "--servers", srv, "--conflict-exit-code", "9", "/x", "--", "true"}, "give --try too"},
		{[]string{"lock", "--servers", srv, "--try", "--conflict-exit-code", "256", "/x", "--", "true"}, "want 0 to 255"},
		{[]string{"semaphore", "--servers", srv, "--max", "2", "--leases", "0", "/s", "--", "true"}, "--leases 0"},
		{[]string{"semaphore", "--servers", srv, "--max", "2", "--leases", "3", "/s", "--", "true"}, "more than --max 2"},
		{[]string{"semaphore", "--servers", srv, "--count", "/c", "/s", "--", "true"}, "--count needs --max"},
		{[]string{"semaphore", "--servers", srv, "/s", "--", "true"}, "give --max N"},
		{[]string{"lock", "--servers", srv, "--read", "--write", "/x", "--", "true"}, "--read and --write exclude each other"},
		{[]string{"lock", "--servers", srv, "--policy", "lax", "/x", "--", "true"}, "want standard or session"},
		{[]string{"lock", "--servers", srv}, "missing PATH"},
		{[]string{"lock", "--servers", srv, "relative", "--", "true"}, `invalid path: "relative" is not absolute`},
		{[]string{"lock", "--servers", srv, "/x", "--bogus", "--", "true"}, "flag provided but not defined: -bogus"},
		{[]string{"lock", "--servers", "zk1:0", "/x", "--", "true"}, `--servers: "zk1:0": port "0" is not a number from 1 to 65535`},
		{[]string{"lock", "--servers", "zk1:70000", "/x", "--", "true"}, `port "70000"`},
		{[]string{"lock", "--servers", "zk1:http", "/x", "--", "true"}, `port "http"`},
		{[]string{"lock", "--servers", "zk1,,zk2", "/x", "--", "true"}, "empty server"},
		{[]string{"lock", "--servers", ":2181", "/x", "--", "true"}, "empty host"},
		{[]string{"lock", "--servers", "::1", "/x", "--", "true"}, "in brackets"},
		{[]string{"lock", "--servers", "zk1/app/", "/x", "--", "true"}, "chroot: invalid path"},
		{[]string{"--servers", "zk1:0", "inspect", "/x"}, `port "0"`},
		{[]string{"queue", "put", "--servers", "zk1:0", "/q", "a"}, `port "0"`},
		{[]string{"--bogus", "lock"}, "flag provided but not defined: -bogus"},
		{[]string{"inspect", "--servers", srv}, "want one PATH"},
		{[]string{"inspect", "--servers", srv, "/a", "/b"}, "want one PATH"},
		{[]string{"exporter", "--servers", srv}, "want one PATH or more"},
		{[]string{"exporter", "--servers", srv, "/a", "relative"}, `"relative" is not absolute`},
		{[]string{"exporter", "--servers", srv, "--max-series", "0", "/a"}, "--max-series 0"},
		{[]string{"exporter", "--servers", srv, "--max-paths", "-1", "/a"}, "--max-paths -1"},
		{[]string{"exporter", "--servers", srv, "--depth", "-1", "/a"}, "--depth -1"},
		{[]string{"exporter", "--servers", srv, "--count", "/sem", "/a"}, "want SEMAPHORE=NODE"},
		{[]string{"exporter", "--servers", srv, "--listen", "127.0.0.1:http-nope", "/a"}, "--listen 127.0.0.1:http-nope"},
		{[]string{"exporter", "--servers", "zk1:0", "/a"}, `port "0"`},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--help\" for usage") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	t.Setenv("ZK_SERVERS", "zk1:99999")
	if code, _, errOut := runCLI(t, "lock", "/x", "--", "true"); code != 2 || !strings.Contains(errOut, `ZK_SERVERS: "zk1:99999"`) {
		t.Errorf("a bad ZK_SERVERS: exit %d, %q", code, errOut)
	}
	t.Setenv("ZK_SERVERS", "")
	if code, _, errOut := runCLI(t, "inspect", "/x"); code != 2 || !strings.Contains(errOut, "no ZooKeeper servers") {
		t.Errorf("no servers: exit %d, %q", code, errOut)
	}
}

// TestCommandNotRunnable: 127 for a program that is not there, 126 for
// one that cannot be run, before any connection (the server is never
// reached: no wait for --connect-timeout).
func TestCommandNotRunnable(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lock", "/x", "--", "no-such-program-zk", "arg"}, 127, "no-such-program-zk: command not found"},
		{[]string{"lock", "/x", "--", "/no/such/dir/prog"}, 127, "command not found"},
		{[]string{"lock", "/x", "--", notExec}, 126, "permission denied"},
		{[]string{"lock", "/x", "--", t.TempDir()}, 126, ""},
		{[]string{"semaphore", "--max", "1", "/s", "--", "no-such-program-zk"}, 127, "command not found"},
		{[]string{"elect", "/e", "--", notExec}, 126, "permission denied"},
		{[]string{"queue", "take", "/q", "--", "no-such-program-zk"}, 127, "command not found"},
	} {
		args := append([]string{"--servers", "192.0.2.1:2181", "--connect-timeout", "1m"}, tc.args...)
		start := time.Now()
		code, _, errOut := runCLI(t, args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || time.Since(start) > 5*time.Second {
			t.Errorf("%q: exit %d after %v, %q; want %d and %q", tc.args, code, time.Since(start), errOut, tc.code, tc.want)
		}
	}
}

// TestConnectionRefusedFast: when every server refuses the connection,
// zkrecipes says so with exit 5 well before --connect-timeout.
func TestConnectionRefusedFast(t *testing.T) {
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close() // now nothing listens there: connections are refused
	}
	start := time.Now()
	code, _, errOut := runCLI(t, "lock", "--servers", strings.Join(addrs, ","), "--connect-timeout", "60s", "/x", "--", "true")
	elapsed := time.Since(start)
	if code != 5 || !strings.Contains(errOut, "connection refused by every server: "+strings.Join(addrs, ", ")) {
		t.Fatalf("exit %d, %q; want 5 and the refusal", code, errOut)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("the refusal took %v", elapsed)
	}
	// A server that takes the connection and never answers is waited
	// for, up to --connect-timeout.
	mute, err := net.Listen("tcp", "127.0.0.1:0") // never accepted: the kernel completes the handshakes
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	start = time.Now()
	code, _, errOut = runCLI(t, "inspect", "--servers", mute.Addr().String()+","+addrs[0], "--connect-timeout", "1500ms", "/x")
	if elapsed := time.Since(start); code != 5 || !strings.Contains(errOut, "no session within 1.5s") || elapsed < time.Second {
		t.Fatalf("an unanswering server: exit %d after %v, %q; want 5 after the connect timeout", code, elapsed, errOut)
	}
}

// TestCommonFlags: one set of flags, defaulting to what came before the
// command; --policy, and the old --standard-policy still taken.
func TestCommonFlags(t *testing.T) {
	newSet := func(before commonFlags) (*flag.FlagSet, *commonFlags) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		ctx := withInvocation(context.Background(), invocation{flags: before})
		return fs, commonFlagsFor(ctx, fs, connFlags|holdFlags)
	}
	fs, cf := newSet(defaultCommonFlags())
	if err := parse(fs, nil); err != nil || cf.sessionTimeout != connection.DefaultSessionTimeout || cf.policy != connection.StandardPolicy {
		t.Fatalf("defaults: %+v %v; want the library's session timeout and the standard policy", cf, err)
	}
	before := defaultCommonFlags()
	before.servers, before.policy = "zk1", connection.SessionPolicy
	fs, cf = newSet(before)
	if err := parse(fs, []string{"--servers", "zk2"}); err != nil || cf.servers != "zk2" || cf.policy != connection.SessionPolicy {
		t.Fatalf("after the command: %+v %v; want zk2 and the session policy from before", cf, err)
	}
	for _, tc := range []struct {
		args []string
		want connection.ErrorPolicy
	}{
		{[]string{"--policy", "session"}, connection.SessionPolicy},
		{[]string{"--policy=standard"}, connection.StandardPolicy},
		{[]string{"--standard-policy=false"}, connection.SessionPolicy},
		{[]string{"--policy", "session", "--standard-policy"}, connection.StandardPolicy},
	} {
		fs, cf := newSet(defaultCommonFlags())
		if err := parse(fs, tc.args); err != nil || cf.policy != tc.want {
			t.Errorf("%q: policy %v (%v), want %v", tc.args, cf.policy, err, tc.want)
		}
	}
}
