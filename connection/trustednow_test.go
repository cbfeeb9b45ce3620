package connection

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// TestTrustedNowMeasuresSilence: TrustedNow follows the silence of the
// server on the monotonic clock at the moment it is asked, without the
// watchdog: under StandardPolicy up to the suspension threshold (two
// thirds of the session timeout), under SessionPolicy up to the local
// expiry; never for another session, an ended one, or a suspended one
// under StandardPolicy.
func TestTrustedNowMeasuresSilence(t *testing.T) {
	for _, tc := range []struct {
		policy ErrorPolicy
		limit  time.Duration // session timeout 3s
	}{{StandardPolicy, 2 * time.Second}, {SessionPolicy, 3*time.Second - 250*time.Millisecond}} {
		clock := 100 * time.Second
		tr := wire.New(wire.Config{Clock: func() time.Duration { return clock }})
		answeredHandshake(t, tr, 0x1234) // answered now
		s := newSession(0x1234, 3*time.Second, 0)
		c := &Client{tr: tr, session: s, state: Connected, opts: &options{errorPolicy: tc.policy}}

		if c.trustedNow(nil) || c.trustedNow(newSession(0x5678, 3*time.Second, 0)) {
			t.Fatalf("%v: another session trusted", tc.policy)
		}
		if !c.trustedNow(s) {
			t.Fatalf("%v: not trusted right after an answer", tc.policy)
		}
		clock += tc.limit - time.Millisecond
		if !c.trustedNow(s) {
			t.Fatalf("%v: not trusted after a silence of %v", tc.policy, tc.limit-time.Millisecond)
		}
		clock += time.Millisecond
		if c.trustedNow(s) {
			t.Fatalf("%v: trusted after a silence of %v", tc.policy, tc.limit)
		}
		clock -= time.Second // answered again: only the state decides now
		s.distrust(ErrSuspended)
		if got, want := c.trustedNow(s), tc.policy == SessionPolicy; got != want {
			t.Fatalf("%v: suspended: trusted %v, want %v", tc.policy, got, want)
		}
		s.end(ErrSessionLost)
		if c.trustedNow(s) {
			t.Fatalf("%v: an ended session trusted", tc.policy)
		}
	}
}

// answeredHandshake has tr's handle dial a connection, write a connect
// request and read the server's answer, which opens session: the server
// last heard from the handle at the request's send time.
func answeredHandshake(t *testing.T, tr *wire.Tracker, session int64) {
	t.Helper()
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	answer := binary.BigEndian.AppendUint32(nil, 0)      // protocolVersion
	answer = binary.BigEndian.AppendUint32(answer, 3000) // timeOut
	answer = binary.BigEndian.AppendUint64(answer, uint64(session))
	answer = binary.BigEndian.AppendUint32(answer, 16) // passwd
	answer = append(answer, make([]byte, 16)...)
	conn, err := tr.Dialer(func(string, string, time.Duration) (net.Conn, error) {
		return &handshakeConn{in: frame(answer)}, nil
	})("tcp", "x", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(frame(make([]byte, 44))); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(conn, make([]byte, 4+len(answer))); err != nil {
		t.Fatal(err)
	}
	if tr.SessionID() != session {
		t.Fatalf("session %#x after the handshake, want %#x", tr.SessionID(), session)
	}
}

// handshakeConn is a server's end that takes every write and answers
// with in.
type handshakeConn struct {
	net.Conn
	in []byte
}

func (c *handshakeConn) Write(b []byte) (int, error) { return len(b), nil }
func (c *handshakeConn) Close() error                { return nil }
func (c *handshakeConn) Read(b []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.in)
	c.in = c.in[n:]
	return n, nil
}
