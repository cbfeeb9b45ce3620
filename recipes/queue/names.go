package queue

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Priorities: Kazoo's, three digits, lower first.
const (
	MinPriority     = 0
	MaxPriority     = 999
	DefaultPriority = 100
)

// entryPrefix starts every entry name: "entry-<priority>-<sequence>".
const entryPrefix = "entry-"

// entry is one item's node name, parsed.
type entry struct {
	name     string
	priority int
	seq      int32
}

// entryName is the name Put asks for; ZooKeeper appends the sequence.
func entryName(priority int) string { return fmt.Sprintf("%s%03d-", entryPrefix, priority) }

// parseEntry reads "entry-PPP-<seq>". Other names are not items.
func parseEntry(name string) (entry, bool) {
	rest, ok := strings.CutPrefix(name, entryPrefix)
	if !ok || len(rest) < 5 || rest[3] != '-' {
		return entry{}, false
	}
	p, err := strconv.Atoi(rest[:3])
	if err != nil || p < MinPriority || rest[0] == '+' || rest[0] == '-' {
		return entry{}, false
	}
	seq, ok := layout.ParseSeq(rest[4:])
	if !ok {
		return entry{}, false
	}
	return entry{name: name, priority: p, seq: seq}, true
}

// sortEntries returns the items among children in queue order: priority,
// then sequence as a signed number. Kazoo sorts the names as text, which
// agrees for the numbers below the directory counter's limit; Put keeps no
// item numbered past it (see placed).
func sortEntries(children []string) []entry {
	out := make([]entry, 0, len(children))
	for _, name := range children {
		if e, ok := parseEntry(name); ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b entry) int {
		if c := cmp.Compare(a.priority, b.priority); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return out
}

// takeMark joins a taken node's data: the worker's WithData, then the
// take's own identity, a fresh UUID. Kazoo writes its worker's id alone;
// either way the identity is what tells one take from another, even two
// workers of one session (connection.Claim).
const takeMark = "\n#take "

// takenData is the data of a new take's taken node.
func takenData(worker []byte) []byte {
	return append(append(append([]byte{}, worker...), takeMark...), connx.NewUUID()...)
}

// takerOf is what a taken node's data says of its worker: the worker's
// WithData for a take of this library's, the data as they are otherwise
// (Kazoo's worker id).
func takerOf(data []byte) []byte {
	i := bytes.LastIndex(data, []byte(takeMark))
	if i < 0 || len(data)-i-len(takeMark) != 36 {
		return data
	}
	return data[:i]
}
