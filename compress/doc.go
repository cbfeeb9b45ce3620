// Package compress reads and writes node data compressed as Apache
// Curator does, so that a Go service and a Java one share compressed
// nodes: Curator's CompressionProvider, and its default,
// GzipCompressionProvider, as Provider and Gzip.
//
// Curator compresses per call: a client has one CompressionProvider
// (CuratorFrameworkFactory.builder().compressionProvider, gzip unless
// set), and create().compressed(), setData().compressed() and
// getData().decompressed() use it on that call only; nothing in a node
// says its data is compressed. This package keeps that shape, as a value
// and three functions rather than options on the connection: Get, Set and
// Create take a Provider and call the client's own Get, Set and Create, so
// the connection's API and its guarantees (a write runs in one session, a
// read may follow the client into a new one) are unchanged, and a caller
// that never compresses pays nothing. Data read another way — a cache's
// Node.Data, a Multi's create — is passed through Provider.Decompress or
// Provider.Compress by the caller, with the node's path.
//
// Gzip writes what Curator 5.4's GzipCompressionProvider writes: one gzip
// member with a 10-byte header of zeros but for the magic and the method
// (no name, no time, operating system 0), the DEFLATE stream at the
// default level, the CRC-32 and the length; the empty input is Curator's
// 20-byte constant. The header, the trailer and the empty value are the
// same bytes as Curator's; the DEFLATE stream in between is Go's
// compress/flate, which may choose other matches than Java's zlib for the
// same input — both sides decompress either stream to the same bytes.
// Gzip decompresses as Curator does: any header flags, one member and
// nothing after it, the CRC-32 and the length checked; anything else is
// ErrCorrupt.
//
// See docs/compress.md.
package compress
