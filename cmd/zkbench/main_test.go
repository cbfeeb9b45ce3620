package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func runZkbench(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code = run(ctx, args, &o, &e)
	return code, o.String(), e.String()
}

// TestHelp: --help and -h print the help to stdout and exit 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		code, out, errOut := runZkbench(t, arg)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: zkbench") || !strings.Contains(out, "-scenarios") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
}

// TestCommandLineRefused: a bad command line is refused before any
// ensemble starts: 2 for a bad flag or value, 1 for what the run itself
// refuses.
func TestCommandLineRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--duration", "-1s"}, 2, "--duration -1s"},
		{[]string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"--link-delay", "2s"}, 2, "--link-delay: \"2s\""},
		{[]string{"--link-delay", "0", "--servers", "127.0.0.1:1"}, 2, "--link-delay needs the local ensemble"},
		{[]string{"--servers", "127.0.0.1:1/app"}, 2, "a chroot (/app) is not taken here"},
		{[]string{"--servers", "zk1:0"}, 2, `--servers: "zk1:0" is not host:port`},
		{[]string{"--participants", "2,x"}, 1, "not a positive count"},
		{[]string{"--scenarios", "locks", "--docs", t.TempDir()}, 1, "--scenarios cache"},
		{[]string{"--scenarios", "locks,curatorqueue", "--docs", t.TempDir()}, 1, "--scenarios curatorqueue"},
		{[]string{"--scenarios", "curatorqueue", "--curatorqueue-items", "0"}, 2, "--curatorqueue-items must be positive"},
		{[]string{"--scenarios", "nothing"}, 1, `"nothing" is not locks`},
	} {
		code, out, errOut := runZkbench(t, tc.args...)
		if code != tc.code || out != "" || !strings.HasPrefix(errOut, "zkbench: ") || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
		if tc.code == 2 && !strings.Contains(errOut, `Run "zkbench --help" for usage.`) {
			t.Errorf("%q: stderr %q does not say where the usage is", tc.args, errOut)
		}
	}
}

func TestServerList(t *testing.T) {
	t.Setenv("ZK_SERVERS", "")
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"", ""},
		{"zk1", "zk1:2181"},
		{"zk1:2182, zk2", "zk1:2182,zk2:2181"},
		{"[::1]:2181,127.0.0.1:3000", "[::1]:2181,127.0.0.1:3000"},
	} {
		got, err := serverList(tc.in)
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("serverList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"zk1,,zk2", "::1", "zk1:", ":2181", "zk1:70000"} {
		if got, err := serverList(bad); err == nil {
			t.Errorf("serverList(%q) = %q, want an error", bad, got)
		}
	}
	t.Setenv("ZK_SERVERS", "zk3:2183")
	if got, err := serverList(""); err != nil || strings.Join(got, ",") != "zk3:2183" {
		t.Errorf("from ZK_SERVERS: %q, %v", got, err)
	}
}
