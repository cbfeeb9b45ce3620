package shared

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Encoding is how a number is written in a node's data, as one of the
// peers writes it.
type Encoding int

const (
	// Int64: 8 bytes, big-endian, two's complement — Curator's
	// DistributedAtomicLong. The default of a Counter.
	Int64 Encoding = iota
	// Int32: 4 bytes, big-endian, two's complement — Curator's SharedCount
	// (and so InterProcessSemaphoreV2's shared maximum), and Kazoo's
	// Counter(support_curator=True).
	Int32
	// Text: the decimal digits in ASCII, with a leading "-" when negative —
	// Kazoo's Counter, which writes repr(value) of a Python int. Kazoo's
	// float counters ("1.5") are not read: they are refused with ErrCorrupt.
	Text
)

// String returns "int64", "int32" or "text".
func (e Encoding) String() string {
	switch e {
	case Int64:
		return "int64"
	case Int32:
		return "int32"
	case Text:
		return "text"
	}
	return "Encoding(" + strconv.Itoa(int(e)) + ")"
}

func (e Encoding) valid() bool { return e >= Int64 && e <= Text }

// ParseEncoding returns the Encoding a String names.
func ParseEncoding(s string) (Encoding, bool) {
	for _, e := range []Encoding{Int64, Int32, Text} {
		if e.String() == s {
			return e, true
		}
	}
	return 0, false
}

// bounds returns the least and the greatest number e can write.
func (e Encoding) bounds() (lo, hi int64) {
	if e == Int32 {
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// Decode reads the number data holds. Empty data is 0, as every peer reads
// it: Curator's DistributedAtomicLong reads an empty node as 0, and Kazoo's
// Counter creates its node empty and reads it as its default, 0. Data that
// is not a number of the encoding — a length other than 8 (Int64) or 4
// (Int32), text other than an optional "-" and decimal digits, a number
// beyond 64 bits — is an error matching ErrCorrupt (Curator would read the
// first 8 or 4 bytes of longer data and ignore the rest: a silent misreading
// refused here).
func (e Encoding) Decode(data []byte) (int64, error) {
	if len(data) == 0 {
		return 0, nil
	}
	switch e {
	case Int64:
		if len(data) == 8 {
			return int64(binary.BigEndian.Uint64(data)), nil
		}
	case Int32:
		if len(data) == 4 {
			return int64(int32(binary.BigEndian.Uint32(data))), nil
		}
	case Text:
		if plainDecimal(data) {
			if n, err := strconv.ParseInt(string(data), 10, 64); err == nil {
				return n, nil
			}
		}
	}
	return 0, errtext.Errorf("%w: %d bytes are not %s data (%s)", ErrCorrupt, len(data), e, preview(data))
}

// plainDecimal reports whether data is an optional "-" and decimal digits,
// what repr of a Python int writes (ParseInt alone would take a "+" too).
func plainDecimal(data []byte) bool {
	if data[0] == '-' {
		data = data[1:]
	}
	if len(data) == 0 {
		return false
	}
	for _, b := range data {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// Encode writes n in the encoding. A number beyond the encoding's range
// (Int32) is an error matching ErrOverflow.
func (e Encoding) Encode(n int64) ([]byte, error) {
	switch e {
	case Int64:
		return binary.BigEndian.AppendUint64(nil, uint64(n)), nil
	case Int32:
		if lo, hi := e.bounds(); n < lo || n > hi {
			return nil, errtext.Errorf("%w: %d is not a 32-bit number", ErrOverflow, n)
		}
		return binary.BigEndian.AppendUint32(nil, uint32(int32(n))), nil
	case Text:
		return strconv.AppendInt(nil, n, 10), nil
	}
	return nil, errtext.Errorf("shared: unknown encoding %d", int(e))
}

// add returns a + delta, or ErrOverflow when the sum leaves the encoding's
// range. Curator's Java longs and ints wrap around; a counter that wraps
// is a counter that lies, so the add is refused instead.
func (e Encoding) add(a, delta int64) (int64, error) {
	lo, hi := e.bounds()
	if delta > 0 && a > hi-delta || delta < 0 && a < lo-delta {
		return 0, errtext.Errorf("%w: %d + %d leaves the range of %s", ErrOverflow, a, delta, e)
	}
	return a + delta, nil
}

// preview shows the start of data for an error message, in hex.
func preview(data []byte) string {
	if len(data) > 16 {
		return fmt.Sprintf("% x ...", data[:16])
	}
	return fmt.Sprintf("% x", data)
}
