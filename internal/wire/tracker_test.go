package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

func frame(body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

func reply(xid int32) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint64(body, 7) // zxid
	body = binary.BigEndian.AppendUint32(body, 0) // err
	return frame(body)
}

func connectResponse(timeoutMS int32, session int64) []byte {
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint32(body, uint32(timeoutMS))
	body = binary.BigEndian.AppendUint64(body, uint64(session))
	body = append(body, 0, 0, 0, 16)
	body = append(body, make([]byte, 16)...)
	return frame(body)
}

func TestFramerSplitsAnyChunking(t *testing.T) {
	stream := append(append(frame([]byte("abc")), frame(nil)...), frame(make([]byte, 40))...)
	for chunk := 1; chunk <= len(stream); chunk++ {
		var f framer
		var heads []int
		for i := 0; i < len(stream); i += chunk {
			f.feed(stream[i:min(i+chunk, len(stream))], func(h []byte) { heads = append(heads, len(h)) })
		}
		if len(heads) != 3 || heads[0] != 3 || heads[1] != 0 || heads[2] != headLen {
			t.Fatalf("chunk %d: heads %v, want [3 0 %d]", chunk, heads, headLen)
		}
	}
}

func TestTrackerUsesSendTimeOfAnsweredRequest(t *testing.T) {
	clock := 100 * time.Second
	tr := newTracker()
	tr.mono = func() time.Duration { return clock }
	c := &trackedConn{t: tr}
	write := func(b []byte) {
		c.mu.Lock()
		c.out.feed(b, func([]byte) { c.sent = append(c.sent, sentReq{at: int64(clock) + 1}) })
		c.mu.Unlock()
	}
	heard := func() time.Duration { h, _ := tr.heard(); return h }
	read := func(b []byte) {
		c.mu.Lock()
		c.in.feed(b, c.reply)
		c.mu.Unlock()
	}

	write(frame(make([]byte, 44))) // connect request at t=100
	clock += time.Second
	read(connectResponse(4000, 0x1234)) // answered at t=101
	if got := tr.sessionID.Load(); got != 0x1234 {
		t.Fatalf("session %x, want 1234", got)
	}
	if got := tr.Timeout(); got != 4*time.Second {
		t.Fatalf("timeout %v, want 4s", got)
	}
	if got := heard(); got != 100*time.Second {
		t.Fatalf("heard %v, want the connect request's send time", got)
	}

	write(reply(1)) // request 1 at t=101 (any frame shape will do)
	clock += time.Second
	write(reply(2)) // request 2 at t=102
	clock += time.Second
	read(reply(-1)) // a watch notification at t=103 answers nothing
	if got := heard(); got != 100*time.Second {
		t.Fatalf("heard %v after a notification, want unchanged", got)
	}
	read(reply(1)) // the answer to request 1
	if got := heard(); got != 101*time.Second {
		t.Fatalf("heard %v, want request 1's send time (101), not now (103)", got)
	}
	read(reply(2))
	if got := heard(); got != 102*time.Second {
		t.Fatalf("heard %v, want 102", got)
	}
}

func createRequest(xid int32, path string) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint32(body, opCreate)
	body = binary.BigEndian.AppendUint32(body, uint32(len(path)))
	body = append(body, path...)
	body = append(body, 0, 0, 0, 0) // data
	body = append(body, 0, 0, 0, 0) // acl
	body = append(body, 0, 0, 0, 3) // flags
	return frame(body)
}

func create2Reply(xid int32, path string, czxid, owner int64) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint64(body, uint64(czxid)) // header zxid
	body = binary.BigEndian.AppendUint32(body, 0)             // err
	body = binary.BigEndian.AppendUint32(body, uint32(len(path)))
	body = append(body, path...)
	stat := binary.BigEndian.AppendUint64(nil, uint64(czxid)) // czxid
	stat = binary.BigEndian.AppendUint64(stat, uint64(czxid)) // mzxid
	stat = binary.BigEndian.AppendUint64(stat, 1)             // ctime
	stat = binary.BigEndian.AppendUint64(stat, 1)             // mtime
	stat = append(stat, make([]byte, 12)...)                  // version, cversion, aversion
	stat = binary.BigEndian.AppendUint64(stat, uint64(owner)) // ephemeralOwner
	stat = append(stat, make([]byte, 16)...)                  // dataLength, numChildren, pzxid
	return frame(append(body, stat...))
}

func TestTrackerUpgradesProtectedCreates(t *testing.T) {
	tr := newTracker()
	c := &trackedConn{t: tr}
	c.out.frames = 1 // past the handshake
	write := func(b []byte) []byte {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.out.atBoundary() && c.out.frames > 0 {
			c.noteCreate(b)
		}
		c.out.feed(b, func([]byte) {})
		return b
	}
	read := func(b []byte) {
		// Byte by byte: the longer head of a create2 reply must be kept
		// however the stream is cut.
		c.mu.Lock()
		c.in.frames = 1
		c.in.grow = c.isCreate2Reply
		for i := range b {
			c.in.feed(b[i:i+1], c.reply)
		}
		c.mu.Unlock()
	}
	const name = "/locks/a/_c_0b9d8a54-52b6-4d1c-9e73-1f3d2a6c5b7e-lock-"
	if b := write(createRequest(7, name)); binary.BigEndian.Uint32(b[8:12]) != opCreate2 {
		t.Fatal("a protected create was not sent as create2")
	}
	if b := write(createRequest(8, "/locks/a/plain-")); binary.BigEndian.Uint32(b[8:12]) != opCreate {
		t.Fatal("a plain create was changed")
	}
	read(create2Reply(7, name+"0000000003", 0x1234, 0x99))
	st, ok := tr.TakeCreated(name + "0000000003")
	if !ok || st.Czxid != 0x1234 || st.Owner != 0x99 {
		t.Fatalf("create2 stat %+v, %v; want czxid 1234, owner 99", st, ok)
	}
	if _, ok := tr.TakeCreated(name + "0000000003"); ok {
		t.Fatal("a create2 stat was taken twice")
	}
	// Thousands of creates in flight at once (waiters queueing together)
	// keep every result until its caller collects it.
	for i := range 10000 {
		tr.putCreated(fmt.Sprintf("%s%010d", name, i), Created{Czxid: int64(i)})
	}
	for i := range 10000 {
		if st, ok := tr.TakeCreated(fmt.Sprintf("%s%010d", name, i)); !ok || st.Czxid != int64(i) {
			t.Fatalf("create %d of 10,000 in flight: %+v, %v", i, st, ok)
		}
	}
}

// connectRequest is go-zookeeper's handshake asking to resume session (0
// for a new one): protocolVersion, lastZxidSeen, timeOut, sessionID,
// passwd.
func connectRequest(session int64) []byte {
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint64(body, 0)
	body = binary.BigEndian.AppendUint32(body, 1000)
	body = binary.BigEndian.AppendUint64(body, uint64(session))
	body = binary.BigEndian.AppendUint32(body, 16)
	body = append(body, make([]byte, 16)...)
	return frame(body)
}

// nopConn is a net.Conn that accepts every write.
type nopConn struct{ net.Conn }

func (nopConn) Write(b []byte) (int, error) { return len(b), nil }
func (nopConn) Close() error                { return nil }

func TestTrackerAllowsOneSessionPerHandle(t *testing.T) {
	tr := newTracker()
	dial := tr.Dialer(func(string, string, time.Duration) (net.Conn, error) { return nopConn{}, nil })
	handshake := func(session int64) error {
		c, err := dial("tcp", "x", time.Second)
		if err != nil {
			return err
		}
		_, err = c.Write(connectRequest(session))
		return err
	}
	answer := func(session int64) {
		c := &trackedConn{t: tr}
		c.mu.Lock()
		c.in.feed(connectResponse(1000, session), c.reply)
		c.mu.Unlock()
	}

	if err := handshake(0); err != nil {
		t.Fatalf("first handshake refused: %v", err)
	}
	answer(0x42)
	if err := handshake(0x42); err != nil {
		t.Fatalf("resuming the handle's session refused: %v", err)
	}
	if err := handshake(0); !errors.Is(err, errSpent) {
		t.Fatalf("a new session on a handle that had one: %v, want errSpent", err)
	}
	if err := handshake(0x43); !errors.Is(err, errSpent) {
		t.Fatalf("another session on the handle: %v, want errSpent", err)
	}
	answer(0) // the server says the session expired
	if !tr.spent.Load() {
		t.Fatal("an expiry answer did not spend the handle")
	}
	if err := handshake(0x42); !errors.Is(err, errSpent) {
		t.Fatalf("handshake on a spent handle: %v, want errSpent", err)
	}
}

func TestRequestPath(t *testing.T) {
	req := func(op int32, path string) []byte {
		body := binary.BigEndian.AppendUint32(nil, 5) // xid
		body = binary.BigEndian.AppendUint32(body, uint32(op))
		body = binary.BigEndian.AppendUint32(body, uint32(len(path)))
		body = append(body, path...)
		return frame(append(body, 0, 0, 0, 0))
	}
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{req(8, "/a/b"), "/a/b"},
		{req(12, "/"), "/"},
		{req(11, ""), ""},                 // a ping: no path
		{req(8, "/a/b")[:18], ""},         // cut short
		{req(8, "xyz"), ""},               // not a path
		{[]byte{0, 0, 0, 1, 2, 3, 4}, ""}, // too short for a header
	} {
		if got := requestPath(tc.b); got != tc.want {
			t.Errorf("requestPath(%x) = %q, want %q", tc.b, got, tc.want)
		}
	}
	// The keys of tooLarge: a node's data and its children, read at once,
	// are two requests; each key is the one the operation takes.
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{req(4, "/a/b"), TooLargeKey("get", "/a/b")},
		{req(12, "/a/b"), TooLargeKey("children", "/a/b")},
		{req(8, "/a/b"), TooLargeKey("children", "/a/b")},
		{req(3, "/a/b"), TooLargeKey("exists", "/a/b")},
		{req(5, "/a/b"), "opcode 5 /a/b"},
		{req(11, ""), ""},
	} {
		if got := requestKey(tc.b); got != tc.want {
			t.Errorf("requestKey(%x) = %q, want %q", tc.b, got, tc.want)
		}
	}
}

func TestFramerReportsOverLongFrames(t *testing.T) {
	var over int
	f := framer{maxLen: 10, overLen: func() { over++ }}
	stream := append(frame(make([]byte, 10)), frame(make([]byte, 11))...)
	for _, b := range stream { // one byte at a time: the length splits
		f.feed([]byte{b}, func([]byte) {})
	}
	if over != 1 || f.frames != 2 {
		t.Fatalf("over-long frames %d, frames %d; want 1 and 2", over, f.frames)
	}
}
