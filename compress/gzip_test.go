package compress_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand"
	"testing"

	"github.com/zkrecipes/zkrecipes/compress"
)

// samples are inputs of the sizes and kinds node data has: empty, one
// byte, text that compresses, bytes that do not, and more than a block.
func samples() map[string][]byte {
	r := rand.New(rand.NewSource(1))
	random := make([]byte, 70000)
	r.Read(random)
	return map[string][]byte{
		"empty":    {},
		"one byte": {'x'},
		"text":     bytes.Repeat([]byte(`{"feature":"on","limit":100}`), 40),
		"random":   random[:300],
		"mid":      bytes.Repeat([]byte("config line\n"), 2000),
		"large":    append(bytes.Repeat([]byte("config line\n"), 30000), random...),
	}
}

func TestGzipRoundTrips(t *testing.T) {
	for name, data := range samples() {
		z, err := compress.Gzip{}.Compress("/p", data)
		if err != nil {
			t.Fatalf("%s: Compress: %v", name, err)
		}
		got, err := compress.Gzip{}.Decompress("/p", z)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: Decompress: %d bytes, %v; want %d bytes", name, len(got), err, len(data))
		}
	}
}

// TestGzipWritesCuratorsHeaderAndTrailer: the header is Curator 5.4's ten
// bytes (operating system 0), the trailer the CRC-32 and the length, and
// any gzip reader reads the member.
func TestGzipWritesCuratorsHeaderAndTrailer(t *testing.T) {
	header := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0}
	for name, data := range samples() {
		z, _ := compress.Gzip{}.Compress("/p", data)
		if !bytes.Equal(z[:10], header) {
			t.Fatalf("%s: header % x, want % x", name, z[:10], header)
		}
		tail := z[len(z)-8:]
		if binary.LittleEndian.Uint32(tail) != crc32.ChecksumIEEE(data) || binary.LittleEndian.Uint32(tail[4:]) != uint32(len(data)) {
			t.Fatalf("%s: trailer % x", name, tail)
		}
		r, err := stdgzip.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatal(err)
		}
		r.Multistream(false)
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: compress/gzip reads %d bytes, %v", name, len(got), err)
		}
	}
}

// TestGzipEmptyIsCuratorsConstant: no bytes compress to the 20 bytes
// Curator's GzipCompressionProvider returns for them.
func TestGzipEmptyIsCuratorsConstant(t *testing.T) {
	want := []byte{31, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	z, err := compress.Gzip{}.Compress("/p", nil)
	if err != nil || !bytes.Equal(z, want) {
		t.Fatalf("Compress(nil) = % x, %v; want % x", z, err, want)
	}
	z[0] = 0 // the caller's to change: the next call is not
	if z, _ := (compress.Gzip{}).Compress("/p", []byte{}); !bytes.Equal(z, want) {
		t.Fatalf("Compress after a change of the last result = % x", z)
	}
}

// TestGzipReadsOptionalHeaderFields: a member with a name, a comment, an
// extra field and a header CRC (as other writers make) decompresses, and
// so does Java 16's operating system byte 255.
func TestGzipReadsOptionalHeaderFields(t *testing.T) {
	data := []byte("written elsewhere")
	var b bytes.Buffer
	w := stdgzip.NewWriter(&b)
	w.Name, w.Comment, w.Extra = "config.json", "a comment", []byte{'a', 'b', 2, 0, 1, 2}
	w.Write(data)
	w.Close()
	if got, err := (compress.Gzip{}).Decompress("/p", b.Bytes()); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("with name, comment and extra: %q, %v", got, err)
	}

	z, _ := compress.Gzip{}.Compress("/p", data)
	withHCRC := append([]byte{}, z[:10]...)
	withHCRC[3] |= 1 << 1
	sum := crc32.ChecksumIEEE(withHCRC)
	withHCRC = append(withHCRC, byte(sum), byte(sum>>8))
	withHCRC = append(withHCRC, z[10:]...)
	if got, err := (compress.Gzip{}).Decompress("/p", withHCRC); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("with a header CRC: %q, %v", got, err)
	}
	withHCRC[10]++
	if _, err := (compress.Gzip{}).Decompress("/p", withHCRC); !errors.Is(err, compress.ErrCorrupt) {
		t.Fatalf("with a wrong header CRC: %v, want ErrCorrupt", err)
	}

	java16 := append([]byte{}, z...)
	java16[9] = 255
	if got, err := (compress.Gzip{}).Decompress("/p", java16); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("operating system 255: %q, %v", got, err)
	}
}

func TestGzipRefusesCorruptData(t *testing.T) {
	data := bytes.Repeat([]byte("abc"), 100)
	z, _ := compress.Gzip{}.Compress("/p", data)
	with := func(f func(b []byte) []byte) []byte { return f(append([]byte{}, z...)) }
	cases := map[string][]byte{
		"empty":             {},
		"plain text":        []byte("not compressed at all"),
		"header only":       z[:10],
		"cut short":         z[:len(z)-3],
		"another method":    with(func(b []byte) []byte { b[2] = 7; return b }),
		"wrong checksum":    with(func(b []byte) []byte { b[len(b)-8]++; return b }),
		"wrong length":      with(func(b []byte) []byte { b[len(b)-1]++; return b }),
		"bytes after":       append(append([]byte{}, z...), 0),
		"two members":       append(append([]byte{}, z...), z...),
		"broken stream":     with(func(b []byte) []byte { b[10] = 0xff; b[11] = 0xff; return b }),
		"name without end":  {0x1f, 0x8b, 8, 1 << 3, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'},
		"extra past end":    {0x1f, 0x8b, 8, 1 << 2, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"header crc cut":    {0x1f, 0x8b, 8, 1 << 1, 0, 0, 0, 0, 0, 0},
		"stored block cut":  {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 1, 5, 0, 0xfa, 0xff, 'a', 0, 0, 0, 0, 0, 0, 0, 0},
		"not gzip, 20 byte": bytes.Repeat([]byte{0x1f}, 20),
	}
	for name, b := range cases {
		got, err := compress.Gzip{}.Decompress("/p", b)
		if !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("%s: Decompress = %d bytes, %v; want ErrCorrupt", name, len(got), err)
		}
	}
}

func FuzzGzipDecompress(f *testing.F) {
	z, _ := compress.Gzip{}.Compress("/p", []byte("seed data seed data"))
	f.Add(z)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := compress.Gzip{}.Decompress("/p", b)
		if err != nil {
			if !errors.Is(err, compress.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, _ := compress.Gzip{}.Compress("/p", out)
		if back, err := (compress.Gzip{}).Decompress("/p", again); err != nil || !bytes.Equal(back, out) {
			t.Fatalf("round trip of decompressed data: %v", err)
		}
	})
}
