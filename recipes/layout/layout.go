package layout

import (
	"cmp"
	"slices"
	"strings"
)

// Kind says which recipe made a node in a lock directory, as far as its
// name tells.
type Kind int

// Node kinds. zkrecipes' and Curator's mutexes share a layout, so their
// nodes are one kind.
const (
	Unknown   Kind = iota // not a contender's name
	Mutex                 // "<prefix>lock-<seq>": zkrecipes mutex, Curator InterProcessMutex
	KazooLock             // "<hex>__lock__<seq>": Kazoo Lock and WriteLock
	KazooRead             // "<hex>__rlock__<seq>": Kazoo ReadLock
	Read                  // "<prefix>__READ__<seq>": read side of a read/write lock
	Write                 // "<prefix>__WRIT__<seq>": write side of a read/write lock
	Lease                 // "<prefix>lease-<seq>": semaphore lease
	Latch                 // "<prefix>latch-<seq>": leader latch
)

var kindNames = map[Kind]string{
	Unknown: "unknown", Mutex: "mutex", KazooLock: "kazoo-lock", KazooRead: "kazoo-read-lock",
	Read: "read-lock", Write: "write-lock", Lease: "semaphore-lease", Latch: "leader-latch",
}

// String returns the kind's name: "mutex", "kazoo-lock",
// "kazoo-read-lock", "read-lock", "write-lock", "semaphore-lease",
// "leader-latch", or "unknown".
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "unknown"
}

// markers, tried in order: the text right before the sequence number.
var markers = []struct {
	marker string
	kind   Kind
}{
	{"__rlock__", KazooRead},
	{"__lock__", KazooLock},
	{"__READ__", Read},
	{"__WRIT__", Write},
	{"lock-", Mutex},
	{"lease-", Lease},
	{"latch-", Latch},
}

// Contender is one node of a lock directory that takes a place in line.
type Contender struct {
	Name string // the node name
	Seq  string // its sequence suffix as ZooKeeper wrote it
	N    int32  // the sequence number: orders the line
	Kind Kind   // the recipe that made it, as its name tells
}

// Parse reads the kind and sequence number from a node name. Names that do
// not end in a marker and a sequence suffix are not contenders: ok is
// false.
//
// ZooKeeper writes the parent's counter, a signed 32-bit number, as
// Java's "%010d": ten digits while it is not negative, and a minus sign
// and nine digits ("-000000005") or, below -999999999, ten
// ("-2147483648", 11 characters) for the negative numbers a directory
// gives once its counter reached its limit (see Exhausted).
//
// The suffix is read from the end of the name: a few comparisons per
// name rather than a search through it for each marker, since a waiter
// deep in a long line parses every name of each listing.
func Parse(name string) (c Contender, ok bool) {
	for _, n := range [...]int{seqLen, seqLen + 1} {
		if len(name) < n {
			break
		}
		head, seq := name[:len(name)-n], name[len(name)-n:]
		v, ok := ParseSeq(seq)
		if !ok {
			continue
		}
		for _, m := range markers {
			if strings.HasSuffix(head, m.marker) {
				return Contender{Name: name, Seq: seq, N: v, Kind: m.kind}, true
			}
		}
	}
	return Contender{}, false
}

// Sort returns the children whose kind accept takes, in line order (see
// Compare); children that are no contender are left out. All sequential
// children of one parent share the parent's counter, which gives each
// number from 0 to SeqLimit-1 once, in order of creation whichever client
// creates, so below the limit the order is the order of creation.
//
// Numbers at the limit (see Exhausted) say nothing of age: ZooKeeper 3.6+
// give SeqLimit to every node after it, and among those the name (a GUID)
// breaks the tie; negative numbers sort ahead of everything. No zkrecipes
// contender holds with such a number: it refuses it and deletes its node.
// Curator and Kazoo compare the suffix as text, which agrees for the
// counter's non-negative values, but they refuse no number: peers sharing
// a directory agree on the line only while its counter is below the limit.
// A lock directory is a container: emptied, it is deleted and its counter
// starts again.
func Sort(children []string, accept func(Kind) bool) []Contender {
	out := make([]Contender, 0, len(children))
	for _, name := range children {
		if c, ok := Parse(name); ok && accept(c.Kind) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, Compare)
	return out
}

// Compare is the line order of Sort: by sequence number as a signed
// number, then by name. It returns a negative number when a is ahead of
// b, a positive one when it is behind, and 0 only for the same name and
// number.
func Compare(a, b Contender) int {
	if c := cmp.Compare(a.N, b.N); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Index returns the position of the node called name in cs, or -1.
func Index(cs []Contender, name string) int {
	return slices.IndexFunc(cs, func(c Contender) bool { return c.Name == name })
}

// MutexKinds accepts the exclusive contenders a mutex shares its line
// with: zkrecipes' and Curator's mutexes and Kazoo's locks, read locks
// included (a Kazoo reader excludes a writer). In a mutex's line the
// first contender holds.
func MutexKinds(k Kind) bool { return k == Mutex || k == KazooLock || k == KazooRead }

// RWKinds accepts the contenders of a read/write lock: zkrecipes' and
// Curator's readers and writers, and Kazoo's ReadLock and WriteLock. In
// its line a writer holds when it is first, a reader when no writer
// (WriteKinds) is ahead of it.
func RWKinds(k Kind) bool { return k == Read || k == Write || k == KazooLock || k == KazooRead }

// WriteKinds accepts the contenders of a read/write lock that exclude
// readers: the write side's, and Kazoo's WriteLock (whose nodes Kazoo's
// Lock shares).
func WriteKinds(k Kind) bool { return k == Write || k == KazooLock }
