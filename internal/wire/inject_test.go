package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
)

// scriptConn is a net.Conn whose reads return a script in chunks of a
// given size and whose writes are recorded.
type scriptConn struct {
	net.Conn
	in    []byte
	chunk int
	mu    sync.Mutex
	out   bytes.Buffer
	shut  bool
}

func (s *scriptConn) Read(b []byte) (int, error) {
	if len(s.in) == 0 {
		return 0, io.EOF
	}
	n := min(len(b), s.chunk, len(s.in))
	copy(b, s.in[:n])
	s.in = s.in[n:]
	return n, nil
}

func (s *scriptConn) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(b)
}

func (s *scriptConn) Close() error { s.shut = true; return nil }

func replyBody(xid int32, zxid int64, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	b = binary.BigEndian.AppendUint32(b, 0)
	return frame(append(b, body...))
}

// readFrames reads frames as go-zookeeper does: a length, then the body,
// each with io.ReadFull.
func readFrames(t *testing.T, r io.Reader, n int) [][]byte {
	var out [][]byte
	for len(out) < n {
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return out
		}
		body := make([]byte, binary.BigEndian.Uint32(l[:]))
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatalf("short frame: %v", err)
		}
		out = append(out, body)
	}
	return out
}

// TestInjectedRepliesTakenOutOfTheStream: however the server's bytes are
// cut, go-zookeeper reads exactly its own frames (the handshake, its
// replies, notifications), each injected request's caller gets its reply
// (one larger than the read buffer too), replies are matched to send
// times in order, and the newest injected zxid is kept for the next
// handshake.
func TestInjectedRepliesTakenOutOfTheStream(t *testing.T) {
	big := bytes.Repeat([]byte("b"), 3*readChunk+17)
	for _, chunk := range []int{1, 3, 7, 16, 100, 4096, 1 << 20} {
		clock := 100 * time.Second
		tr := newTracker()
		tr.mono = func() time.Duration { return clock }
		sc := &scriptConn{chunk: chunk}
		c := &trackedConn{Conn: sc, t: tr}
		c.Write(connectRequest(0))
		sc.in = connectResponse(4000, 0x55)
		if got := readFrames(t, c, 1); len(got) != 1 {
			t.Fatalf("chunk %d: handshake frames %d", chunk, len(got))
		}
		var got []string
		done := func(name string) *injected {
			return &injected{done: func(zxid int64, code int32, body []byte, err error) {
				if err != nil {
					got = append(got, name+" "+err.Error())
					return
				}
				got = append(got, name+" "+string(body[:min(len(body), 3)])+" "+string(rune('0'+zxid%10)))
			}}
		}
		req := func() []byte { return frame(make([]byte, 8)) }
		clock = 101 * time.Second
		c.Write(reply(1)) // go-zookeeper's request 1
		// The connection's writer writes each before the test goes on.
		clock = 102 * time.Second
		if err := tr.inject(0x55, req(), done("a")); err != nil {
			t.Fatal(err)
		}
		tr.writers.Wait()
		clock = 103 * time.Second
		if err := tr.inject(0x55, req(), done("b")); err != nil {
			t.Fatal(err)
		}
		tr.writers.Wait()
		clock = 104 * time.Second
		c.Write(reply(2))
		var xids []int32
		out := sc.out.Bytes()
		for len(out) >= 8 {
			l := binary.BigEndian.Uint32(out)
			xids = append(xids, int32(binary.BigEndian.Uint32(out[4:8])))
			out = out[4+l:]
		}
		if len(xids) != 5 || !isInjectedXid(xids[2]) || !isInjectedXid(xids[3]) || xids[2] == xids[3] {
			t.Fatalf("xids on the wire %v", xids)
		}
		var stream []byte
		stream = append(stream, reply(-1)...) // a notification
		stream = append(stream, reply(1)...)
		stream = append(stream, replyBody(xids[2], 7, []byte("aaa"))...)
		stream = append(stream, reply(-1)...)
		stream = append(stream, replyBody(xids[3], 9, big)...)
		stream = append(stream, reply(2)...)
		sc.in = stream
		frames := readFrames(t, c, 4)
		var zk []int32
		for _, f := range frames {
			zk = append(zk, int32(binary.BigEndian.Uint32(f)))
		}
		if !slices.Equal(zk, []int32{-1, 1, -1, 2}) {
			t.Fatalf("chunk %d: go-zookeeper read %v, want [-1 1 -1 2]", chunk, zk)
		}
		if !slices.Equal(got, []string{"a aaa 7", "b bbb 9", "b " + errInjectLost.Error()}[:2]) {
			t.Fatalf("chunk %d: injected %q", chunk, got)
		}
		if h, _ := tr.heard(); h != 104*time.Second {
			t.Fatalf("chunk %d: heard %v, want 104s", chunk, h)
		}
		if tr.seenZxid.Load() != 9 {
			t.Fatalf("seen zxid %d", tr.seenZxid.Load())
		}
		// The next handshake carries it.
		b := connectRequest(0x55)
		tr.raiseLastZxid(b)
		if z := binary.BigEndian.Uint64(b[8:16]); z != 9 {
			t.Fatalf("lastZxidSeen %d, want 9", z)
		}
	}
}

// TestInjectedFailWithTheConnection: requests in flight when the
// connection fails get a connection-loss error, once; none is sent on a
// failed connection, nor for another session.
func TestInjectedFailWithTheConnection(t *testing.T) {
	tr := newTracker()
	sc := &scriptConn{chunk: 1 << 20}
	c := &trackedConn{Conn: sc, t: tr}
	c.Write(connectRequest(0))
	sc.in = connectResponse(4000, 0x56)
	readFrames(t, c, 1)
	var errs []error
	r := &injected{done: func(_ int64, _ int32, _ []byte, err error) { errs = append(errs, err) }}
	if err := tr.inject(0x57, frame(make([]byte, 8)), r); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("another session: %v", err)
	}
	for range 2 {
		if err := tr.inject(0x56, frame(make([]byte, 8)), r); err != nil {
			t.Fatal(err)
		}
	}
	tr.writers.Wait()
	sc.in = reply(-1)
	if n := len(readFrames(t, c, 2)); n != 1 { // then EOF
		t.Fatalf("frames %d", n)
	}
	if len(errs) != 2 || !errors.Is(errs[0], zk.ErrConnectionClosed) || !errors.Is(errs[1], zk.ErrConnectionClosed) {
		t.Fatalf("errors %v", errs)
	}
	c.Close()
	if len(errs) != 2 {
		t.Fatal("failed twice")
	}
	if err := tr.inject(0x56, frame(make([]byte, 8)), r); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("on a failed connection: %v", err)
	}
}

// TestInjectedReplyTooLong: with a bound on replies, an injected reply
// above it fails its request and is skipped; the connection goes on.
func TestInjectedReplyTooLong(t *testing.T) {
	tr := newTracker()
	tr.maxReply = 1000
	sc := &scriptConn{chunk: 300}
	c := &trackedConn{Conn: sc, t: tr}
	c.Write(connectRequest(0))
	sc.in = connectResponse(4000, 0x58)
	readFrames(t, c, 1)
	var errs []error
	r := &injected{done: func(_ int64, _ int32, _ []byte, err error) { errs = append(errs, err) }}
	tr.inject(0x58, frame(make([]byte, 8)), r)
	tr.writers.Wait()
	c.Write(reply(3))
	xid := int32(injXidBase - 1)
	sc.in = append(replyBody(xid, 5, make([]byte, 5000)), reply(3)...)
	frames := readFrames(t, c, 1)
	if len(frames) != 1 || int32(binary.BigEndian.Uint32(frames[0])) != 3 {
		t.Fatalf("go-zookeeper read %d frames", len(frames))
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrReplyTooLarge) {
		t.Fatalf("errors %v", errs)
	}
}

// TestMultiReadCoding: a multiRead request as ZooKeeper reads it
// (MultiOperationRecord: per op a header type/done/err and the request),
// and a reply with data, an error and a listing decoded; a reply without
// a body, as a server that does not know the request sends, is refused.
func TestMultiReadCoding(t *testing.T) {
	reads := []conntypes.BulkRead{{Path: "/a", Children: true}, {Path: "/b"}}
	b := EncodeMultiRead(reads, []string{"/a", "/b"})
	if int(binary.BigEndian.Uint32(b)) != len(b)-4 || binary.BigEndian.Uint32(b[8:12]) != opMultiRead {
		t.Fatal("header")
	}
	d := &dec{b: b[12:]}
	for _, want := range []struct {
		typ  int32
		path string
	}{{opGetData, "/a"}, {opGetChildren, "/a"}, {opGetData, "/b"}} {
		typ, done, code := d.i32(), d.take(1)[0], d.i32()
		if typ != want.typ || done != 0 || code != -1 || string(d.bytes()) != want.path || d.take(1)[0] != 0 {
			t.Fatalf("op %v", want)
		}
	}
	if typ, done, code := d.i32(), d.take(1)[0], d.i32(); typ != -1 || done != 1 || code != -1 || len(d.b) != 0 || d.bad {
		t.Fatal("end")
	}

	head := func(b []byte, typ int32, done bool, code int32) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(typ))
		if done {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		return binary.BigEndian.AppendUint32(b, uint32(code))
	}
	var r []byte
	r = head(r, opGetData, false, 0)
	r = appendString(r, "data")
	stat := make([]byte, 68)
	binary.BigEndian.PutUint64(stat[0:8], 11)   // czxid
	binary.BigEndian.PutUint64(stat[60:68], 12) // pzxid
	r = append(r, stat...)
	r = head(r, opGetChildren, false, 0)
	r = binary.BigEndian.AppendUint32(r, 2)
	r = appendString(r, "x")
	r = appendString(r, "y")
	r = head(r, opError, false, -101)
	r = binary.BigEndian.AppendUint32(r, uint32(0xffffff9b)) // -101
	r = head(r, -1, true, -1)
	out := make([]conntypes.BulkResult[struct{}], 2)
	if err := DecodeMultiRead(r, reads, out); err != nil {
		t.Fatal(err)
	}
	if string(out[0].Data) != "data" || out[0].Stat.Czxid != 11 || out[0].Stat.Pzxid != 12 ||
		!slices.Equal(out[0].Children, []string{"x", "y"}) || out[0].Err != nil || out[0].ChildErr != nil {
		t.Fatalf("first %+v", out[0])
	}
	if !errors.Is(out[1].Err, zk.ErrNoNode) || out[1].Stat != nil {
		t.Fatalf("second %+v", out[1])
	}
	if err := DecodeMultiRead(nil, reads, make([]conntypes.BulkResult[struct{}], 2)); err == nil {
		t.Fatal("an empty reply decoded")
	}
	if err := DecodeMultiRead(r[:len(r)-3], reads, make([]conntypes.BulkResult[struct{}], 2)); err == nil {
		t.Fatal("a short reply decoded")
	}
}

func (s *scriptConn) SetWriteDeadline(time.Time) error { return nil }
