package curatorqueue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node names, Curator's. ZooKeeper appends a 10-digit sequence number to
// each.
const (
	simplePrefix = "qn-"    // SimpleDistributedQueue
	itemPrefix   = "queue-" // DistributedQueue and its variants
	separator    = "|"      // around a delay queue's epoch and an id queue's id
)

// kind is the variant of a DistributedQueue: it decides an item's name and
// the order consumers take items in.
type kind int

const (
	plainKind    kind = iota // DistributedQueue: queue-<seq>
	priorityKind             // DistributedPriorityQueue: queue-<sign><8 hex digits><seq>
	delayKind                // DistributedDelayQueue: queue-|<hex epoch ms>|<seq>
	idKind                   // DistributedIdQueue: queue-|<id>|<seq>
)

func (k kind) String() string {
	return [...]string{"queue", "priority queue", "delay queue", "id queue"}[k]
}

// priorityName is the part of a priority queue's item name after
// "queue-": Curator's priorityToString, "1" and the priority's 8 hex
// digits for a priority >= 0, "0" and those of its two's complement for a
// negative one, so that names sort as priorities do.
func priorityName(p int32) string {
	sign := "1"
	if p < 0 {
		sign = "0"
	}
	return fmt.Sprintf("%s%08X", sign, uint32(p))
}

// epochName is the part of a delay queue's item name after "queue-":
// Curator's epochToString, the time in milliseconds since the Unix epoch
// in hex (at least 8 digits) between separators.
func epochName(t time.Time) string {
	return fmt.Sprintf("%s%08X%s", separator, t.UnixMilli(), separator)
}

// epochOf is the time a delay queue's item is due, in milliseconds since
// the Unix epoch, read as Curator reads it: the hex digits between the
// last two separators; 0 (due at once) for a name without them.
func epochOf(name string) int64 {
	j := strings.LastIndex(name, separator)
	if j <= 0 {
		return 0
	}
	i := strings.LastIndex(name[:j], separator)
	if i <= 0 || j <= i+1 {
		return 0
	}
	ms, err := strconv.ParseInt(name[i+1:j], 16, 64)
	if err != nil {
		return 0
	}
	return ms
}

// fixID is an id as Curator puts it in a name: '/' and '|' become '_'.
func fixID(id string) string {
	return strings.NewReplacer("/", "_", separator, "_").Replace(id)
}

// idName is the part of an id queue's item name after "queue-".
func idName(id string) string { return separator + fixID(id) + separator }

// parseID splits an id queue's item name into its id and the name without
// it, as Curator's parseId: a name without two separators is its own id.
func parseID(name string) (id, rest string) {
	i := strings.Index(name, separator)
	if i < 0 {
		return name, name
	}
	j := strings.Index(name[i+1:], separator)
	if j < 0 {
		return name, name
	}
	j += i + 1
	return name[i+1 : j], name[:i] + name[j+1:]
}

// order returns the names of the queue's items, foreign names left out, in
// the order a consumer of kind k takes them: by name (a plain or priority
// queue: the priority, then the sequence), by the name without its id (an
// id queue: the sequence), by due time (a delay queue; Curator leaves
// items due at the same millisecond in the server's listing order, this
// package in name order).
func order(k kind, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if strings.HasPrefix(n, itemPrefix) {
			out = append(out, n)
		}
	}
	switch k {
	case idKind:
		slices.SortStableFunc(out, func(a, b string) int {
			_, ra := parseID(a)
			_, rb := parseID(b)
			return strings.Compare(ra, rb)
		})
	case delayKind:
		slices.SortFunc(out, func(a, b string) int {
			if c := compareInt(epochOf(a), epochOf(b)); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
	default:
		slices.Sort(out)
	}
	return out
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// simpleOrder returns a SimpleDistributedQueue's item names in the order
// they are taken: by name, foreign names left out.
func simpleOrder(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if strings.HasPrefix(n, simplePrefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
