package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDevRefusesBadArguments: what dev cannot start on exits 2, saying
// why, before any server starts, and leaves a --dir it refused as it was.
func TestDevRefusesBadArguments(t *testing.T) {
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	three := t.TempDir()
	if err := os.WriteFile(filepath.Join(three, devMarker), []byte("servers 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--servers", "2"}, "--servers 2: want 1 or 3"},
		{[]string{"dev", "--servers", "zk1:2181"}, "--servers is how many"},
		{[]string{"--servers", "zk1:2181", "dev"}, "dev starts its own"},
		{[]string{"dev", "--link-delay", "2s"}, "--link-delay 2s: want at most 1s"},
		{[]string{"dev", "--link-delay", "-1ms"}, "cannot be negative"},
		{[]string{"dev", "--port", "70000"}, "--port 70000"},
		{[]string{"dev", "extra"}, "no arguments"},
		{[]string{"dev", "--dir", foreign}, "not a directory that zkrecipes dev made"},
		{[]string{"dev", "--dir", file}, "--dir " + file},
		{[]string{"dev", "--dir", three, "--servers", "1"}, "holds the data of a 3-server ensemble: give --servers 3"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(foreign, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the refused directory changed: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(foreign); len(entries) != 1 {
		t.Errorf("the refused directory holds %d entries, want its 1", len(entries))
	}
}

// TestDevMarker: the marker names 1 or 3 servers, nothing else.
func TestDevMarker(t *testing.T) {
	for s, want := range map[string]int{"servers 1\n": 1, "servers 3": 3, "servers 2\n": 0, "servers x": 0, "": 0, "servers 3 more": 0} {
		n, err := parseDevMarker(s)
		if n != want || (err == nil) != (want != 0) {
			t.Errorf("parseDevMarker(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
}
