package lockcore

import (
	"cmp"
	"math"
	"slices"
	"strconv"
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
	Seq  string // its sequence suffix as ZooKeeper wrote it
	N    int32  // the sequence number: orders the queue
	Kind Kind
}

// Parse reads the kind and sequence number from a node name. Names that do
// not end in a marker and a sequence suffix are not contenders.
//
// ZooKeeper writes the parent's counter, a signed 32-bit number, as
// Java's "%010d": ten digits while it is not negative, and a minus sign
// and nine digits ("-000000005") or, below -999999999, ten
// ("-2147483648", 11 characters) for the negative numbers a directory
// gives once its counter reached its limit (see Exhausted).
//
// The suffix is read from the end of the name: a few comparisons per
// name, rather than a search through it for each marker, which made most
// of a deep queue's client-side CPU (FuzzParse checks that both agree).
func Parse(name string) (Contender, bool) {
	for _, n := range [...]int{SeqLen, SeqLen + 1} {
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

// SeqLimit is the last number of a directory's sequence counter.
const SeqLimit = math.MaxInt32

// Exhausted reports whether sequence number n says nothing of when its
// node was made: the limit, and negative numbers. ZooKeeper gives each
// number from 0 to SeqLimit-1 once per directory, in order of creation
// (it counts creates, not deletes). At the limit, 3.6 and later stop the
// counter: every later node is numbered SeqLimit too, and creates in
// flight behind one at the limit are numbered from -2147483648 up, from
// the records of the requests ahead of them. 3.5 and older let the
// counter wrap to negative numbers for good (and back to 0 after 2^32
// creates, which no recipe can tell from a new directory). A node with
// such a number cannot be placed in the queue; the directory must be made
// again (connection.ErrSequenceExhausted).
func Exhausted(n int32) bool { return n < 0 || n == SeqLimit }

// ParseSeq reads a sequence suffix in ZooKeeper's format, and only that:
// "%010d" of a signed 32-bit number ("0000000007", "-000000005",
// "-2147483648"; not "-0000000000").
func ParseSeq(s string) (int32, bool) {
	digits := s
	if strings.HasPrefix(s, "-") {
		digits = s[1:]
		if len(s) != SeqLen && len(s) != SeqLen+1 {
			return 0, false
		}
	} else if len(s) != SeqLen {
		return 0, false
	}
	if digits == "" {
		return 0, false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	// Only what Java's "%010d" writes: a negative number, padded to ten
	// characters with its sign, or eleven without padding.
	if digits != s && (n >= 0 || (len(s) == SeqLen+1 && digits[0] == '0')) {
		return 0, false
	}
	return int32(n), true
}

// Sort returns the children whose kind accept takes, in queue order: by
// sequence number as a signed number, then by name. All sequential
// children of one parent share the parent's counter, which gives each
// number from 0 to 2147483646 once, in order of creation whichever client
// creates, so below the limit the order is the order of creation. Numbers
// at the limit (see Exhausted) say nothing of age: ZooKeeper 3.6+ give
// 2147483647 to every node after it, and among those the name (a GUID)
// breaks the tie; negative numbers sort ahead of everything. None of our
// contenders holds with such a number — Lock.Acquire refuses it and
// deletes the node — so they never decide who holds; a waiter that lists
// one ahead of it waits for it to go. Curator and Kazoo compare the suffix
// as text, which agrees for the counter's non-negative values, but they
// refuse no number: peers sharing a directory agree only while its counter
// is below the limit. A lock directory is a container: emptied, it is
// deleted and its counter starts again.
func Sort(children []string, accept func(Kind) bool) []Contender {
	out := make([]Contender, 0, len(children))
	for _, name := range children {
		if c, ok := Parse(name); ok && accept(c.Kind) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, compare)
	return out
}

// compare is the queue order of Sort.
func compare(a, b Contender) int {
	if c := cmp.Compare(a.N, b.N); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Ahead returns what Sort would return up to and including ours, without
// ordering the contenders behind ours: those accept takes that are ahead
// of ours, in queue order, then ours. With keep > 0 it returns only the
// keep contenders nearest ahead, and more says whether there were others.
// found is false, and cs empty, when ours is not among the children. A
// waiter deep in a long queue lists it often; this costs it a parse of
// each name and no sort of the queue.
func Ahead(children []string, accept func(Kind) bool, ours string, keep int) (cs []Contender, more, found bool) {
	cs, n, found := ahead(children, accept, ours, keep)
	return cs, keep > 0 && n > keep, found
}

// ahead is Ahead that counts the contenders ahead of ours, kept or not.
func ahead(children []string, accept func(Kind) bool, ours string, keep int) (cs []Contender, n int, found bool) {
	me, ok := Parse(ours)
	if !ok || !accept(me.Kind) || !slices.Contains(children, ours) {
		return nil, 0, false
	}
	for _, name := range children {
		c, ok := Parse(name)
		if !ok || !accept(c.Kind) || compare(c, me) >= 0 {
			continue
		}
		n++
		if keep <= 0 || len(cs) < keep {
			cs = append(cs, c)
			if len(cs) == keep {
				slices.SortFunc(cs, compare)
			}
			continue
		}
		// cs holds the keep nearest so far, in order: c replaces the
		// farthest of them if it is nearer.
		if compare(c, cs[0]) > 0 {
			i, _ := slices.BinarySearchFunc(cs, c, compare)
			copy(cs[0:i-1], cs[1:i])
			cs[i-1] = c
		}
	}
	slices.SortFunc(cs, compare)
	return append(cs, me), n, true
}

// Index returns the position of name in cs, or -1.
func Index(cs []Contender, name string) int {
	return slices.IndexFunc(cs, func(c Contender) bool { return c.Name == name })
}

// MutexKinds accepts the exclusive contenders a mutex shares its queue
// with: Go and Curator mutexes and Kazoo's locks, read locks included (a
// Kazoo reader excludes a writer).
func MutexKinds(k Kind) bool { return k == Mutex || k == KazooLock || k == KazooRead }

// RWKinds accepts the contenders of a read/write lock: Curator's (and
// ours) readers and writers, and Kazoo's ReadLock and WriteLock.
func RWKinds(k Kind) bool { return k == Read || k == Write || k == KazooLock || k == KazooRead }

// writes reports whether a contender of a read/write lock excludes readers.
func writes(k Kind) bool { return k == Write || k == KazooLock }

// Predicate decides, for contenders in queue order and the index of ours,
// whether ours holds. If not, it names the contenders to watch, the one
// whose release matters first, first. Predicates must be monotone: if ours
// holds with some earlier contenders present, it holds with fewer. They
// look only at the contenders ahead of ours: a waiter keeps no listing of
// those behind it.
type Predicate func(cs []Contender, ours int) (held bool, watch []int)

// Shared is the reader's predicate of a read/write lock, Curator's: a
// reader holds when no writer is ahead of it, however many readers are;
// otherwise it watches the first writer (Curator watches the first, not
// the nearest: only the first writer's release can let it in). Monotone:
// with fewer contenders ahead there is no more writer ahead.
func Shared(cs []Contender, ours int) (bool, []int) {
	for i := 0; i < ours; i++ {
		if writes(cs[i].Kind) {
			return false, []int{i}
		}
	}
	return true, nil
}

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

// Predecessor is Curator's mutex predicate: the first contender holds, a
// waiter watches only its predecessor. A release wakes one waiter instead
// of Exclusive's two, and the next holder usually lists again first: for
// a queue where wake-ups count for more than handoff latency (a work
// queue's line of idle workers).
func Predecessor(_ []Contender, ours int) (bool, []int) {
	if ours == 0 {
		return true, nil
	}
	return false, []int{ours - 1}
}
