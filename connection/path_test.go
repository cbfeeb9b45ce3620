package connection

import (
	"errors"
	"strings"
	"testing"
)

func TestValidatePath(t *testing.T) {
	good := []string{"/", "/a", "/a/b", "/locks/orders-1", "/a/.b", "/a/..b", "/ünïcode", "/a b"}
	bad := []string{"", "a", "a/b", "/a/", "//", "/a//b", "/.", "/..", "/a/.", "/a/../b", "/a\x00b", "/\xff", "/a\x01", "/a\u007f", "/a\ud7ff\ue000", "/\ufff0"}
	for _, p := range good {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range bad {
		if err := ValidatePath(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("ValidatePath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

func TestNamespacePaths(t *testing.T) {
	cases := []struct{ ns, client, server string }{
		{"", "/a", "/a"},
		{"", "/", "/"},
		{"/app", "/", "/app"},
		{"/app", "/a/b", "/app/a/b"},
	}
	for _, c := range cases {
		if got := join(c.ns, c.client); got != c.server {
			t.Errorf("join(%q, %q) = %q, want %q", c.ns, c.client, got, c.server)
		}
		if got := strip(c.ns, c.server); got != c.client {
			t.Errorf("strip(%q, %q) = %q, want %q", c.ns, c.server, got, c.client)
		}
	}
	for p, want := range map[string]string{"/a": "/", "/a/b": "/a", "/a/b/c": "/a/b", "/": "/"} {
		if got := parent(p); got != want {
			t.Errorf("parent(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestUUIDFormat: protected names carry a version-4 UUID in its
// 36-character text form, which Curator recognises.
func TestUUIDFormat(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		u := newUUID()
		if len(u) != 36 || u[8] != '-' || u[13] != '-' || u[18] != '-' || u[23] != '-' || u[14] != '4' || !strings.ContainsRune("89ab", rune(u[19])) {
			t.Fatalf("%q is not a version-4 UUID", u)
		}
		if strings.Trim(strings.ReplaceAll(u, "-", ""), "0123456789abcdef") != "" {
			t.Fatalf("%q is not lowercase hex", u)
		}
		if !IsProtected(ProtectedPrefix + u + "-lock-0000000001") {
			t.Fatalf("a name with %q is not protected", u)
		}
		if seen[u] {
			t.Fatalf("%q twice", u)
		}
		seen[u] = true
	}
}
