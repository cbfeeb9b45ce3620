package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// authRequest is go-zookeeper's auth request (opcode 100) with xid.
func authRequest(xid int32) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint32(body, opSetAuth)
	body = binary.BigEndian.AppendUint32(body, 0) // type
	body = appendString(body, "digest")
	body = appendString(body, "bob:pw")
	return frame(body)
}

// pingRequest is go-zookeeper's ping (xid -2, opcode 11).
func pingRequest() []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(0xfffffffe))
	body = binary.BigEndian.AppendUint32(body, 11)
	return frame(body)
}

// wireXids reads the xids of the frames written on sc after the
// handshake.
func wireXids(sc *scriptConn) []int32 {
	sc.mu.Lock()
	out := append([]byte(nil), sc.out.Bytes()...)
	sc.mu.Unlock()
	var xids []int32
	for first := true; len(out) >= 8; first = false {
		l := binary.BigEndian.Uint32(out)
		if !first {
			xids = append(xids, int32(binary.BigEndian.Uint32(out[4:8])))
		}
		out = out[4+l:]
	}
	return xids
}

// waitXids waits until n frames after the handshake are on the wire.
func waitXids(t *testing.T, sc *scriptConn, n int) []int32 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		xids := wireXids(sc)
		if len(xids) >= n {
			return xids
		}
		if time.Now().After(deadline) {
			t.Fatalf("frames on the wire %v, want %d", xids, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestInjectedWaitForCredentials: on a new connection of a handle that
// holds credentials, no injected request is written before go-zookeeper's
// auth request is answered (a read before it would run without the
// credentials), whether the answer comes or go-zookeeper's send loop
// writes another request first; the auth reply, which ZooKeeper sends
// ahead of requests written before it, is matched by its xid.
func TestInjectedWaitForCredentials(t *testing.T) {
	tr := newTracker()
	handshake := func(session int64) (*trackedConn, *scriptConn) {
		sc := &scriptConn{chunk: 1 << 20}
		c := &trackedConn{Conn: sc, t: tr}
		c.Write(connectRequest(session))
		sc.in = connectResponse(4000, 0x59)
		readFrames(t, c, 1)
		return c, sc
	}
	// The first connection: the client adds its credentials.
	c, sc := handshake(0)
	c.Write(authRequest(1))
	sc.in = reply(1)
	readFrames(t, c, 1)
	if tr.creds != 1 {
		t.Fatalf("credentials counted %d, want 1", tr.creds)
	}
	c.Close()

	var answers []string
	done := func(name string) *injected {
		return &injected{done: func(_ int64, _ int32, _ []byte, err error) {
			if err != nil {
				answers = append(answers, name+" lost")
				return
			}
			answers = append(answers, name)
		}}
	}
	// A reconnect: the auth reply lets the requests go.
	c, sc = handshake(0x59)
	if err := tr.inject(0x59, frame(make([]byte, 8)), done("re-registration")); err != nil {
		t.Fatal(err)
	}
	if err := tr.inject(0x59, frame(make([]byte, 8)), done("read")); err != nil {
		t.Fatal(err)
	}
	c.Write(authRequest(2))
	if xids := wireXids(sc); len(xids) != 1 || xids[0] != 2 {
		t.Fatalf("before the auth reply, the wire holds %v, want [2]", xids)
	}
	sc.in = reply(2)
	readFrames(t, c, 1)
	xids := waitXids(t, sc, 3)
	if !isInjectedXid(xids[1]) || !isInjectedXid(xids[2]) {
		t.Fatalf("wire %v", xids)
	}
	c.Write(reply(3)) // go-zookeeper's next request, xid 3
	// ZooKeeper answers in order here; the replies are matched by xid.
	sc.in = append(append(replyBody(xids[2], 5, nil), reply(3)...), replyBody(xids[1], 6, nil)...)
	if frames := readFrames(t, c, 1); len(frames) != 1 || int32(binary.BigEndian.Uint32(frames[0])) != 3 {
		t.Fatalf("go-zookeeper read %d frames", len(frames))
	}
	readFrames(t, c, 1) // EOF after the last injected reply
	if len(answers) != 2 || answers[0] != "read" || answers[1] != "re-registration" {
		t.Fatalf("answers %v", answers)
	}
	if sc.shut {
		t.Fatal("the connection was closed before its end")
	}

	// Another reconnect: go-zookeeper's send loop writes a ping first
	// (it only runs once its credentials are answered).
	answers = nil
	c, sc = handshake(0x59)
	if err := tr.inject(0x59, frame(make([]byte, 8)), done("read")); err != nil {
		t.Fatal(err)
	}
	if xids := wireXids(sc); len(xids) != 0 {
		t.Fatalf("before any request of go-zookeeper, the wire holds %v", xids)
	}
	c.Write(pingRequest())
	xids = waitXids(t, sc, 2)
	if xids[0] != -2 || !isInjectedXid(xids[1]) {
		t.Fatalf("wire %v", xids)
	}
	// The connection ends: the injected request is answered, once.
	tr.writers.Wait()
	c.Close()
	c.Close()
	if len(answers) != 1 || answers[0] != "read lost" {
		t.Fatalf("answers %v", answers)
	}

	// A request queued on a connection that fails before the credentials
	// are answered is answered too.
	answers = nil
	c, _ = handshake(0x59)
	if err := tr.inject(0x59, frame(make([]byte, 8)), done("re-registration")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if len(answers) != 1 || answers[0] != "re-registration lost" {
		t.Fatalf("answers %v", answers)
	}
}

// TestInjectedWriteHasDeadline: a socket that takes no bytes (the server
// stopped reading) fails an injected request once the tracker's write
// deadline passes, with the connection, even when go-zookeeper clears its
// own deadline meanwhile; and inject never blocks its caller.
func TestInjectedWriteHasDeadline(t *testing.T) {
	for _, clear := range []bool{false, true} {
		tr := newTracker()
		a, b := net.Pipe()
		c := &trackedConn{Conn: a, t: tr}
		go func() {
			var buf [256]byte
			io.ReadAtLeast(b, buf[:], len(connectRequest(0)))
			b.Write(connectResponse(300, 0x5a)) // write deadline: 200 ms
		}()
		if _, err := c.Write(connectRequest(0)); err != nil {
			t.Fatal(err)
		}
		readFrames(t, c, 1)
		errs := make(chan error, 1)
		r := &injected{done: func(_ int64, _ int32, _ []byte, err error) { errs <- err }}
		if clear {
			go c.SetWriteDeadline(time.Time{}) // go-zookeeper clears its deadline
		}
		start := time.Now()
		if err := tr.inject(0x5a, frame(make([]byte, 8)), r); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("inject blocked %v", d)
		}
		select {
		case err := <-errs:
			if !errors.Is(err, zk.ErrConnectionClosed) {
				t.Fatalf("clear %v: %v", clear, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("clear %v: the write is still blocked", clear)
		}
		tr.writers.Wait()
		b.Close()
		c.Close()
	}
}
