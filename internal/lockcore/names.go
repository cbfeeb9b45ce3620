package lockcore

import (
	"slices"
	"strings"
)

// Kind says which recipe made a node in a lock directory, as far as its
// name tells.
type Kind int

// Node kinds. Go and Curator mutexes share a layout, so their nodes are one
// kind.
const (
	Unknown   Kind = iota
	Mutex          // "<prefix>lock-<seq>": zkrecipes mutex, Curator InterProcessMutex
	KazooLock      // "<hex>__lock__<seq>": Kazoo Lock and WriteLock
	KazooRead      // "<hex>__rlock__<seq>": Kazoo ReadLock
	Read           // "<prefix>__READ__<seq>": read side of a read/write lock
	Write          // "<prefix>__WRIT__<seq>": write side of a read/write lock
	Lease          // "<prefix>lease-<seq>": semaphore lease
	Latch          // "<prefix>latch-<seq>": leader latch
)

var kindNames = map[Kind]string{
	Unknown: "unknown", Mutex: "mutex", KazooLock: "kazoo-lock", KazooRead: "kazoo-read-lock",
	Read: "read-lock", Write: "write-lock", Lease: "semaphore-lease", Latch: "leader-latch",
}

func (k Kind) String() string { return kindNames[k] }

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

// SeqLen is the width of ZooKeeper's sequence suffix.
const SeqLen = 10

// Contender is one node of a lock directory.
type Contender struct {
	Name string // the node name
	Seq  string // its 10-digit sequence suffix; orders the queue
	Kind Kind
}

// Parse reads the kind and sequence number from a node name. Names that do
// not end in a marker and a 10-digit sequence are not contenders.
func Parse(name string) (Contender, bool) {
	if len(name) < SeqLen {
		return Contender{}, false
	}
	head, seq := name[:len(name)-SeqLen], name[len(name)-SeqLen:]
	for _, r := range seq {
		if r < '0' || r > '9' {
			return Contender{}, false
		}
	}
	for _, m := range markers {
		if strings.HasSuffix(head, m.marker) {
			return Contender{Name: name, Seq: seq, Kind: m.kind}, true
		}
	}
	return Contender{}, false
}

// Sort returns the children whose kind accept takes, in queue order: by
// sequence number (Curator's key, the text after the marker, compared as
// equal-width strings; Kazoo's, the trailing digits), then by name. All
// sequential children of one parent share the parent's counter, so the
// order is the order of creation whichever client made them.
func Sort(children []string, accept func(Kind) bool) []Contender {
	out := make([]Contender, 0, len(children))
	for _, name := range children {
		if c, ok := Parse(name); ok && accept(c.Kind) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Contender) int {
		if c := strings.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Index returns the position of name in cs, or -1.
func Index(cs []Contender, name string) int {
	return slices.IndexFunc(cs, func(c Contender) bool { return c.Name == name })
}

// MutexKinds accepts the exclusive contenders a mutex shares its queue
// with: Go and Curator mutexes and Kazoo's locks, read locks included (a
// Kazoo reader excludes a writer).
func MutexKinds(k Kind) bool { return k == Mutex || k == KazooLock || k == KazooRead }

// Predicate decides, for contenders in queue order and the index of ours,
// whether ours holds. If not, it names the contenders to watch, the one
// whose release matters first, first. Predicates must be monotone: if ours
// holds with some earlier contenders present, it holds with fewer.
type Predicate func(cs []Contender, ours int) (held bool, watch []int)

// Exclusive is the mutex predicate: the first contender holds. A waiter
// watches its predecessor, and also the predecessor's predecessor, so that
// it already knows when its predecessor became the holder (see Acquire).
func Exclusive(_ []Contender, ours int) (bool, []int) {
	switch {
	case ours == 0:
		return true, nil
	case ours == 1:
		return false, []int{0}
	default:
		return false, []int{ours - 1, ours - 2}
	}
}
