package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// contenderLines sorts a directory's contender nodes into the lines of
// the recipes they belong to, in queue order. Kazoo's nodes join the
// read/write lock when there is one (Go's rwlock counts them), else the
// mutex; kazoo reports whether they share the directory with nodes in
// Curator's layout, which Curator does not see them beside.
func contenderLines(kids []string) (lines map[family][]layout.Contender, kazoo bool) {
	cs := layout.Sort(kids, func(k layout.Kind) bool { return k != layout.Unknown })
	has := map[layout.Kind]bool{}
	for _, c := range cs {
		has[c.Kind] = true
	}
	rw := has[layout.Read] || has[layout.Write] || has[layout.KazooRead]
	lines = map[family][]layout.Contender{}
	for _, c := range cs {
		f := famMutex
		switch c.Kind {
		case layout.Read, layout.Write, layout.KazooRead:
			f = famRW
		case layout.KazooLock:
			if rw {
				f = famRW
			}
		case layout.Latch:
			f = famLatch
		case layout.Lease:
			f = famLeases
		}
		lines[f] = append(lines[f], c)
	}
	kazoo = (has[layout.KazooLock] || has[layout.KazooRead]) &&
		(has[layout.Mutex] || has[layout.Read] || has[layout.Write] || has[layout.Latch] || has[layout.Lease])
	return lines, kazoo
}

// mixWarnings says which recipes at p do not exclude each other.
func mixWarnings(p string, fams []family, kazoo bool) []string {
	var out []string
	name := func(f family) string {
		if f == famMutex && slices.Contains(fams, famLatch) {
			return "mutex (or LeaderSelector)"
		}
		return nameOf[f]
	}
	for i, a := range fams {
		for _, b := range fams[i+1:] {
			out = append(out, fmt.Sprintf("%s and %s contend at %s without excluding each other", article(name(a)), article(name(b)), p))
		}
	}
	if kazoo {
		out = append(out, fmt.Sprintf("Kazoo's nodes and nodes in Curator's layout share %s: Curator does not see Kazoo's, so a Curator and a Kazoo participant can hold at once", p))
	}
	return out
}

func article(s string) string {
	if strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

// roles says who holds and who waits in one recipe's line (in queue
// order): a mutex's first holds; a read/write lock's readers with no
// writer ahead hold together, a writer when first; a latch's first leads.
func roles(f family, cs []layout.Contender) []string {
	out := make([]string, len(cs))
	if f == famRW && downgrades(cs, out) {
		return out
	}
	for i, c := range cs {
		held := i == 0
		if f == famRW && (c.Kind == layout.Read || c.Kind == layout.KazooRead) {
			held = !slices.ContainsFunc(cs[:i], func(a layout.Contender) bool { return layout.WriteKinds(a.Kind) })
		}
		switch {
		case f == famLeases:
			out[i] = "holder" // the max is the parent's: see its semaphore
		case f == famLatch && held:
			out[i] = "leader"
		case f == famLatch:
			out[i] = "candidate"
		case held:
			out[i] = "holder"
		default:
			out[i] = "waiter"
		}
	}
	return out
}

// downgrades gives the roles of a read/write lock's line in which a
// writer took the read side too (a downgrade): its read node has the
// writer's sequence number, so that it keeps the writer's place once the
// writer's node goes (Curator's CURATOR-621, and ours). While both nodes
// are there they are one participant's, and the read node holds when the
// writer does: the line is judged without it. It reports false, leaving
// out alone, when there is no such node.
func downgrades(cs []layout.Contender, out []string) bool {
	writer := map[int32]int{}
	for i, c := range cs {
		if c.Kind == layout.Write {
			writer[c.N] = i
		}
	}
	var rest []layout.Contender
	var at, down []int
	for i, c := range cs {
		if _, ok := writer[c.N]; ok && c.Kind == layout.Read {
			down = append(down, i)
			continue
		}
		rest, at = append(rest, c), append(at, i)
	}
	if len(down) == 0 {
		return false
	}
	for j, r := range roles(famRW, rest) {
		out[at[j]] = r
	}
	for _, i := range down {
		out[i] = out[writer[cs[i].N]]
	}
	return true
}
