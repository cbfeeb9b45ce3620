package curatorqueue

import (
	"encoding/binary"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// The framing of a DistributedQueue node's data, Curator's ItemSerializer:
// a version (4 bytes, big-endian), then per item an item opcode, the
// item's length (4 bytes, big-endian) and its bytes, then an end opcode.
// A node holds one item (put) or a batch (putMulti); Curator's consumer
// hands each item to its callback in turn.
const (
	itemsVersion = 0x00010001
	itemOpcode   = 0x01
	endOpcode    = 0x02
)

// encodeItems frames items as Curator's ItemSerializer does.
func encodeItems(items [][]byte) []byte {
	n := 4 + 1
	for _, it := range items {
		n += 1 + 4 + len(it)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, itemsVersion)
	for _, it := range items {
		b = append(b, itemOpcode)
		b = binary.BigEndian.AppendUint32(b, uint32(len(it)))
		b = append(b, it...)
	}
	return append(b, endOpcode)
}

// decodeItems reads a node's data framed by encodeItems (or by Curator).
// Data that is not so framed is an error matching ErrCorrupt; bytes after
// the end opcode are ignored, as Curator's reader ignores them.
func decodeItems(b []byte) ([][]byte, error) {
	if len(b) < 4 {
		return nil, errtext.Errorf("%w: %d bytes, no version", ErrCorrupt, len(b))
	}
	if v := binary.BigEndian.Uint32(b); v != itemsVersion {
		return nil, errtext.Errorf("%w: version %#x, want %#x", ErrCorrupt, v, itemsVersion)
	}
	b = b[4:]
	items := [][]byte{}
	for {
		if len(b) == 0 {
			return nil, errtext.Errorf("%w: no end opcode", ErrCorrupt)
		}
		op := b[0]
		b = b[1:]
		if op == endOpcode {
			return items, nil
		}
		if op != itemOpcode {
			return nil, errtext.Errorf("%w: opcode %#x", ErrCorrupt, op)
		}
		if len(b) < 4 {
			return nil, errtext.Errorf("%w: an item's size cut short", ErrCorrupt)
		}
		size := binary.BigEndian.Uint32(b)
		b = b[4:]
		if size > uint32(len(b)) {
			// Curator reads a negative size as an error too; a size
			// beyond the data would be an end of stream.
			return nil, errtext.Errorf("%w: an item of %d bytes, %d left", ErrCorrupt, int32(size), len(b))
		}
		items = append(items, append([]byte{}, b[:size]...))
		b = b[size:]
	}
}
