// Package errtext composes the library's error messages so that each one
// names a package once.
//
// The rule, for every package of the library:
//
//   - A sentinel's text starts with its package's name, "mutex: lock lost",
//     so that it says where it comes from when it is printed alone.
//   - A package that returns an error with context puts its name first,
//     then the operation and the path: "mutex: unlock /locks/x: ...".
//   - A name already in the message is not repeated: the wrapped text goes
//     in without it. Unlock's error after the session was lost reads
//     "mutex: unlock /locks/x: lock lost: connection: session lost", not
//     "mutex: unlock /locks/x: mutex: lock lost: connection: session lost".
//
// Each line of a joined error (errors.Join) is a message of its own.
// Errorf keeps the wrapped errors: errors.Is and errors.As see the same
// chain as with fmt.Errorf.
package errtext

import (
	"fmt"
	"strings"
)

// names are the package names a part of a message may start with: the
// library's packages, and go-zookeeper's. A new package adds its name.
var names = []string{
	"connection", "retry", "lockcore", "zk",
	"mutex", "naive", "rwlock", "semaphore", "election", "queue", "multilock", "cache",
	"node", "discovery", "group", "partition", "shared", "barrier", "compress", "lease", "curatorqueue", "watch",
}

// Errorf formats as fmt.Errorf does, %w included, and returns an error
// whose message names each package once (see the package comment).
func Errorf(format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	msg := err.Error()
	if once := NameOnce(msg); once != msg {
		return &named{msg: once, err: err}
	}
	return err
}

// named is an error whose message was rewritten; it unwraps to the error
// fmt.Errorf made.
type named struct {
	msg string
	err error
}

func (e *named) Error() string { return e.msg }
func (e *named) Unwrap() error { return e.err }

// NameOnce returns msg with each package name that starts a part of it —
// "name: " at the start of a line, after ": " or after "(" — kept at its
// first occurrence on the line and removed from the later ones. A path
// ending in a name ("/locks/queue: ...") is not a part's start.
func NameOnce(msg string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for i := 0; i < len(msg); {
		if msg[i] == '\n' {
			clear(seen)
			b.WriteByte('\n')
			i++
			continue
		}
		if atBoundary(msg, i) {
			if name := nameAt(msg[i:]); name != "" {
				if seen[name] {
					i += len(name) + len(": ")
					continue
				}
				seen[name] = true
			}
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}

// atBoundary reports whether a part of msg can start at i: at the start of
// a line, after ": ", or after "(".
func atBoundary(msg string, i int) bool {
	switch {
	case i == 0, msg[i-1] == '\n', msg[i-1] == '(':
		return true
	case i >= 2:
		return msg[i-2:i] == ": "
	}
	return false
}

// nameAt returns the package name s starts with, followed by ": ", or "".
func nameAt(s string) string {
	for _, n := range names {
		if strings.HasPrefix(s, n) && strings.HasPrefix(s[len(n):], ": ") {
			return n
		}
	}
	return ""
}
