package layout

import (
	"math"
	"strconv"
	"strings"
)

// seqLen is the width of ZooKeeper's sequence suffix for a number that is
// not negative.
const seqLen = 10

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
// creates, which no reader can tell from a new directory). A node with
// such a number cannot be placed in the line; the directory must be made
// again (zkrecipes' recipes fail with connection.ErrSequenceExhausted).
func Exhausted(n int32) bool { return n < 0 || n == SeqLimit }

// ParseSeq reads a sequence suffix in ZooKeeper's format, and only that:
// "%010d" of a signed 32-bit number ("0000000007", "-000000005",
// "-2147483648"; not "-0000000000").
func ParseSeq(s string) (n int32, ok bool) {
	digits := s
	if strings.HasPrefix(s, "-") {
		digits = s[1:]
		if len(s) != seqLen && len(s) != seqLen+1 {
			return 0, false
		}
	} else if len(s) != seqLen {
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
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	// Only what Java's "%010d" writes: a negative number, padded to ten
	// characters with its sign, or eleven without padding.
	if digits != s && (v >= 0 || (len(s) == seqLen+1 && digits[0] == '0')) {
		return 0, false
	}
	return int32(v), true
}
