package connection

import (
	"strings"
	"testing"
)

// FuzzValidatePath: ValidatePath never panics; a path it accepts has the
// shape it promises, and survives a namespace: joined under a valid
// namespace and stripped again it is itself, and its parent and children
// are valid paths.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"/", "/a", "/a/b", "", "a", "/a/", "//", "/a/./b", "/a/../b", "/a\x00", "/\xff", "/ü/ñ", "/a b", "/.a", "/a/..b", "/\ue000", "/\ufff0"} {
		f.Add(s, "/app")
	}
	f.Add("/locks/x", "")
	f.Add("/x", "/ns/deep")
	f.Fuzz(func(t *testing.T, p, ns string) {
		if ValidatePath(p) != nil {
			return
		}
		if !strings.HasPrefix(p, "/") || (p != "/" && strings.HasSuffix(p, "/")) || strings.Contains(p, "//") || len(p) > MaxPathLength {
			t.Fatalf("ValidatePath accepted %q", p)
		}
		if par := parent(p); ValidatePath(par) != nil {
			t.Fatalf("parent(%q) = %q is not valid", p, par)
		}
		if c := childPath(p, "child"); ValidatePath(c) != nil && len(c) <= MaxPathLength {
			t.Fatalf("childPath(%q) = %q is not valid", p, c)
		}
		if ns != "" && (ValidatePath(ns) != nil || ns == "/") {
			return
		}
		server := join(ns, p)
		if ValidatePath(server) != nil && len(server) <= MaxPathLength {
			t.Fatalf("join(%q, %q) = %q is not valid", ns, p, server)
		}
		if got := strip(ns, server); got != p {
			t.Fatalf("strip(%q, join(%q, %q) = %q) = %q", ns, ns, p, server, got)
		}
	})
}
