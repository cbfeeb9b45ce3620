package wire

import (
	"encoding/binary"
)

// Framing: the tracker reads the bytes each way as whole frames, whatever
// the sizes of the writes and reads that carry them.

// headLen is how much of each frame's body framer keeps: enough for the
// connect response's session ID, or a reply's header. longHeadLen is what
// it keeps of a frame its grow function picks: a create2 reply's path and
// Stat.
const (
	headLen     = 16
	longHeadLen = 16 + 4 + 1024 + 68
)

// framer splits a stream of length-prefixed frames (int32 length, body)
// and hands each frame's first headLen bytes (fewer if the frame is
// shorter) to a callback once the frame is complete.
type framer struct {
	lenBuf [4]byte
	lenN   int
	remain int // body bytes still to come; 0 while reading a length
	head   []byte
	limit  int // how much of this frame's body to keep
	frames int
	// grow, if set, sees the first headLen bytes of each frame and says
	// whether to keep longHeadLen bytes of it instead.
	grow func(head []byte) bool
	// overLen, if set, is called when a frame's length exceeds maxLen.
	maxLen  int
	overLen func()
}

// atBoundary reports whether the next byte fed starts a frame.
func (f *framer) atBoundary() bool { return f.remain == 0 && f.lenN == 0 }

func (f *framer) feed(b []byte, done func(head []byte)) {
	for len(b) > 0 {
		if f.remain == 0 {
			k := copy(f.lenBuf[f.lenN:], b)
			f.lenN += k
			b = b[k:]
			if f.lenN < 4 {
				return
			}
			f.lenN = 0
			f.remain = int(int32(binary.BigEndian.Uint32(f.lenBuf[:])))
			if f.overLen != nil && f.remain > f.maxLen {
				f.overLen()
			}
			f.head = f.head[:0]
			f.limit = headLen
			if f.remain <= 0 {
				f.remain = 0
				f.frames++
				done(nil)
			}
			continue
		}
		k := min(f.remain, len(b))
		for chunk := b[:k]; len(chunk) > 0 && len(f.head) < f.limit; {
			n := min(f.limit-len(f.head), len(chunk))
			f.head = append(f.head, chunk[:n]...)
			chunk = chunk[n:]
			if f.limit == headLen && len(f.head) == headLen && f.grow != nil && f.grow(f.head) {
				f.limit = longHeadLen
			}
		}
		f.remain -= k
		b = b[k:]
		if f.remain == 0 {
			f.frames++
			done(f.head)
		}
	}
}
