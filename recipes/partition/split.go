package partition

import (
	"slices"
	"strings"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Func decides a member's share: given this member's identifier, the
// identifiers of the party's members (sorted, one per member node, so an
// identifier two members share is there twice) and the set's items
// (sorted, each once), it returns the items this member takes. Every
// member must use the same Func, or shares overlap (the locks still keep
// each item to one holder, but some member then waits for an item another
// keeps) or leave items untaken.
type Func func(identifier string, members, items []string) []string

// KazooSplit is Kazoo's partition function, the default: the member at
// index i of the sorted members (the first, if its identifier is there
// twice) takes every n-th item of the sorted set from the i-th on, n the
// number of members. A member not among them takes nothing.
func KazooSplit(identifier string, members, items []string) []string {
	i := slices.Index(members, identifier)
	if i < 0 {
		return nil
	}
	var out []string
	for j := i; j < len(items); j += len(members) {
		out = append(out, items[j])
	}
	return out
}

// checkName refuses what cannot be one node name: an item is a lock
// directory's name, an identifier part of a party node's.
func checkName(what, s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\x00") {
		return errtext.Errorf("partition: %w: %s %q is not a node name", connection.ErrInvalidPath, what, s)
	}
	return nil
}

// normalize sorts items and drops repeats, as Kazoo's sorted(set) has
// them.
func normalize(items []string) []string {
	out := slices.Clone(items)
	slices.Sort(out)
	return slices.Compact(out)
}
