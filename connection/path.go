package connection

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// MaxPathLength is the longest path ValidatePath accepts, in bytes. A
// request must fit the server's jute.maxbuffer (1 MiB by default), or the
// server drops the connection, which a client would take for a network
// fault and retry; a path this long is a mistake long before that.
const MaxPathLength = 32 << 10

// ValidatePath checks that p is a valid absolute ZooKeeper path: it starts
// with "/", does not end with "/" (except the root), has no empty, "." or
// ".." component, no NUL, control or otherwise forbidden character, and is
// at most MaxPathLength bytes. The error wraps ErrInvalidPath.
func ValidatePath(p string) error {
	bad := func(why string) error {
		if len(p) > 80 {
			return errtext.Errorf("%w: %q... (%d bytes) %s", ErrInvalidPath, p[:80], len(p), why)
		}
		return errtext.Errorf("%w: %q %s", ErrInvalidPath, p, why)
	}
	switch {
	case len(p) > MaxPathLength:
		return bad(fmt.Sprintf("is longer than %d bytes", MaxPathLength))
	case p == "":
		return bad("is empty")
	case p[0] != '/':
		return bad("is not absolute")
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return bad("ends with /")
	case !utf8.ValidString(p):
		return bad("is not valid UTF-8")
	}
	for rest := p[1:]; ; {
		part, tail, more := strings.Cut(rest, "/")
		switch part {
		case "":
			return bad("has an empty component")
		case ".", "..":
			return bad("has a relative component")
		}
		if !more {
			break
		}
		rest = tail
	}
	for _, r := range p {
		// The characters ZooKeeper's PathUtils rejects.
		switch {
		case r == 0:
			return bad("contains NUL")
		case r < 0x20, r >= 0x7f && r <= 0x9f:
			return bad("contains a control character")
		case r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xffff:
			return bad("contains a character ZooKeeper forbids")
		}
	}
	return nil
}

// join returns the server path of p under namespace ns ("" for none).
func join(ns, p string) string {
	if ns == "" {
		return p
	}
	if p == "/" {
		return ns
	}
	return ns + p
}

// strip returns the client path of server path p under namespace ns.
func strip(ns, p string) string {
	if ns == "" {
		return p
	}
	if p == ns {
		return "/"
	}
	return strings.TrimPrefix(p, ns)
}

// parent returns the parent of a valid path ("/" for top-level nodes).
func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// childPath returns the path of child name under dir.
func childPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
