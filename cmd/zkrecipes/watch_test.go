package main

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// runWatchCLI runs watch with args until the test calls stop, which
// returns its exit code.
func runWatchCLI(t *testing.T, args ...string) (out *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"watch"}, args...), out, &errOut) }()
	var code *int
	stop = func() int {
		if code == nil {
			cancel()
			c := <-done
			code = &c
			if errOut.String() != "" {
				t.Logf("watch stderr: %s", errOut.String())
			}
		}
		return *code
	}
	t.Cleanup(func() { stop() })
	return out, stop
}

// TestWatchLines follows a path from before it exists: created, its
// children come, change and go; then ends with its context, exit 0.
func TestWatchLines(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := root + "/app"
	out, stop := runWatchCLI(t, "--servers", ens.ConnectString(), p)
	seen(t, out, "INITIALIZED")
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create(p, []byte("cfg"), 0, acl); err != nil {
		t.Fatal(err)
	}
	seen(t, out, "CREATED "+p+` v0 "cfg"`)
	if _, err := conn.Create(p+"/a", []byte("1"), 0, acl); err != nil {
		t.Fatal(err)
	}
	seen(t, out, "CREATED "+p+`/a v0 "1"`)
	if _, err := conn.Set(p+"/a", []byte("two\n"), -1); err != nil {
		t.Fatal(err)
	}
	seen(t, out, "CHANGED "+p+`/a v1 "two\n"`)
	if err := conn.Delete(p+"/a", -1); err != nil {
		t.Fatal(err)
	}
	seen(t, out, "DELETED "+p+"/a")
	if code := stop(); code != 0 {
		t.Fatalf("watch ended with exit %d, want 0\n%s", code, out.String())
	}
	if first := strings.SplitN(out.String(), "\n", 2)[0]; !strings.HasSuffix(first, "RESYNC 0 nodes") {
		t.Fatalf("first line %q", first)
	}
}

// TestWatchJSON: one object a line; a view that exists is the first
// RESYNC's nodes or CREATED lines, binary data in base64; --depth 0 leaves
// the children out.
func TestWatchJSON(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create(root+"/bin", []byte{0xff, 0}, 0, acl); err != nil {
		t.Fatal(err)
	}
	out, stop := runWatchCLI(t, "--servers", ens.ConnectString(), "--json", root)
	seen(t, out, `"type":"TRUSTED"`)
	if _, err := conn.Set(root+"/bin", []byte("text"), -1); err != nil {
		t.Fatal(err)
	}
	seen(t, out, `"data":"text"`)
	stop()
	type line struct {
		Time    time.Time `json:"time"`
		Type    string    `json:"type"`
		Path    string    `json:"path"`
		Trusted *bool     `json:"trusted"`
		Node    *struct {
			Path       string `json:"path"`
			Version    int32  `json:"version"`
			Data       string `json:"data"`
			DataBase64 string `json:"data_base64"`
		} `json:"node"`
	}
	var sawBinary, sawChange bool
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Time.IsZero() || l.Type == "" {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if (l.Type == "RESYNC") != (l.Trusted != nil) {
			t.Fatalf("line %q: trusted is given with RESYNC alone", sc.Text())
		}
		if l.Type == "RESYNC" && *l.Trusted {
			t.Fatalf("line %q: the first view, before the first load, is not trusted", sc.Text())
		}
		if l.Node != nil && l.Node.Path == root+"/bin" {
			sawBinary = sawBinary || l.Type == "CREATED" && l.Node.DataBase64 == "/wA="
			sawChange = sawChange || l.Type == "CHANGED" && l.Node.Data == "text" && l.Node.Version == 1
		}
	}
	if !sawBinary || !sawChange {
		t.Fatalf("binary created %v, changed %v:\n%s", sawBinary, sawChange, out.String())
	}

	out, stop = runWatchCLI(t, "--servers", ens.ConnectString(), "--depth", "0", root)
	seen(t, out, "TRUSTED")
	stop()
	if strings.Contains(out.String(), root+"/bin") {
		t.Fatalf("--depth 0 shows a child:\n%s", out.String())
	}
}

// TestWatchUsage: bad arguments are usage errors (exit 2).
func TestWatchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"watch"},
		{"watch", "--servers", "127.0.0.1:1", "a", "b"},
		{"watch", "--servers", "127.0.0.1:1", "relative"},
		{"watch", "--servers", "127.0.0.1:1", "--depth", "-2", "/x"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
