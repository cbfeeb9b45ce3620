package compress

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Gzip is Curator's GzipCompressionProvider, its clients' default: see
// the package comment for the bytes it writes and what it accepts. The
// zero value is ready to use.
type Gzip struct{}

const (
	gzipHeaderSize  = 10
	gzipTrailerSize = 8
	minDeflateSize  = 2 // no DEFLATE stream is shorter
)

// gzipHeader is Curator 5.4's: magic, method 8 (deflate), no flags, no
// time, no extra flags, operating system 0 (what Java's GZIPOutputStream
// wrote before Java 16).
var gzipHeader = [gzipHeaderSize]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0}

// emptyGzip is Curator's compression of no bytes: the header, an empty
// final fixed-Huffman block, a zero CRC-32 and a zero length.
var emptyGzip = [20]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}

// The header's flags (RFC 1952).
const (
	flagHCRC    = 1 << 1
	flagExtra   = 1 << 2
	flagName    = 1 << 3
	flagComment = 1 << 4
)

// Compress returns data as one gzip member, as Curator writes it. It
// never fails.
func (Gzip) Compress(_ string, data []byte) ([]byte, error) {
	if len(data) == 0 {
		e := emptyGzip
		return e[:], nil
	}
	var b bytes.Buffer
	b.Grow(gzipHeaderSize + len(data)/2 + 64)
	b.Write(gzipHeader[:])
	w, err := flate.NewWriter(&b, flate.DefaultCompression)
	if err != nil {
		return nil, err // not with a valid level
	}
	_, _ = w.Write(data) // a bytes.Buffer does not fail
	_ = w.Close()
	var tail [gzipTrailerSize]byte
	binary.LittleEndian.PutUint32(tail[:4], crc32.ChecksumIEEE(data))
	binary.LittleEndian.PutUint32(tail[4:], uint32(len(data)))
	b.Write(tail[:])
	return b.Bytes(), nil
}

// Decompress returns the data of one gzip member, as Curator reads it:
// the header may carry any of gzip's optional fields, the member must
// end the data, and its CRC-32 and length must match. Anything else is
// an error wrapping ErrCorrupt.
func (Gzip) Decompress(_ string, data []byte) ([]byte, error) {
	n, err := gzipHeaderLen(data)
	if err != nil {
		return nil, err
	}
	if len(data) < n+minDeflateSize+gzipTrailerSize {
		return nil, corrupt("cut short")
	}
	body := bytes.NewReader(data[n : len(data)-gzipTrailerSize])
	// flate reads a bytes.Reader (an io.ByteReader) byte by byte, never
	// past the stream's end: what is left after it is not DEFLATE.
	out, err := io.ReadAll(flate.NewReader(body))
	if err != nil {
		return nil, corrupt("%v", err)
	}
	if body.Len() != 0 {
		return nil, corrupt("more than one gzip member, or bytes after it")
	}
	tail := data[len(data)-gzipTrailerSize:]
	if binary.LittleEndian.Uint32(tail[:4]) != crc32.ChecksumIEEE(out) || binary.LittleEndian.Uint32(tail[4:]) != uint32(len(out)) {
		return nil, corrupt("checksum or length does not match")
	}
	return out, nil
}

// gzipHeaderLen checks a gzip header at the start of data and returns
// its length.
func gzipHeaderLen(data []byte) (int, error) {
	if len(data) < gzipHeaderSize || data[0] != 0x1f || data[1] != 0x8b {
		return 0, corrupt("not in gzip format")
	}
	if data[2] != 8 {
		return 0, corrupt("compression method %d is not deflate", data[2])
	}
	flags := data[3]
	n := gzipHeaderSize
	if flags&flagExtra != 0 {
		if len(data) < n+2 {
			return 0, corrupt("cut short")
		}
		n += 2 + int(binary.LittleEndian.Uint16(data[n:]))
	}
	for _, f := range []byte{flagName, flagComment} {
		if flags&f == 0 {
			continue
		}
		if n > len(data) {
			return 0, corrupt("cut short")
		}
		end := bytes.IndexByte(data[n:], 0)
		if end < 0 {
			return 0, corrupt("cut short")
		}
		n += end + 1
	}
	if flags&flagHCRC != 0 {
		if n+2 > len(data) {
			return 0, corrupt("cut short")
		}
		if uint16(crc32.ChecksumIEEE(data[:n])) != binary.LittleEndian.Uint16(data[n:]) {
			return 0, corrupt("header checksum does not match")
		}
		n += 2
	}
	if n > len(data) {
		return 0, corrupt("cut short")
	}
	return n, nil
}

func corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, a...))
}
