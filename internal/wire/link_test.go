package wire

import (
	"errors"
	"testing"
)

// TestLinkSendsOnItsConnectionOnly: a Link is the connection current when
// it was taken; once that connection has failed, its Send is refused
// (ErrNotConnected) though the handle has another connection, and
// Opened, asked for before, is closed when a connection next lets
// requests be written.
func TestLinkSendsOnItsConnectionOnly(t *testing.T) {
	tr := newTracker()
	first := &trackedConn{Conn: &scriptConn{chunk: 1 << 20}, t: tr}
	first.Write(connectRequest(0))
	first.Conn.(*scriptConn).in = connectResponse(4000, 0x63)
	readFrames(t, first, 1)
	l, err := tr.Link(0x63)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Link(0x64); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Link of another session = %v, want ErrNotConnected", err)
	}
	answered := make(chan error, 1)
	if err := l.Send(EncodeSync("/a"), func(_ int64, _ int32, _ []byte, err error) { answered <- err }); err != nil {
		t.Fatal(err)
	}
	opened := tr.Opened()
	first.Close()
	if err := <-answered; err == nil {
		t.Fatal("a request on a link that failed was answered without error")
	}
	second := &trackedConn{Conn: &scriptConn{chunk: 1 << 20}, t: tr}
	second.Write(connectRequest(0x63))
	second.Conn.(*scriptConn).in = connectResponse(4000, 0x63)
	readFrames(t, second, 1)
	if err := l.Send(EncodeSync("/a"), func(int64, int32, []byte, error) {}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Send on the failed link = %v, want ErrNotConnected", err)
	}
	select {
	case <-opened:
	default:
		t.Fatal("Opened not closed once the next connection opened")
	}
	if l2, err := tr.Link(0x63); err != nil || l2.c != second {
		t.Fatalf("Link after the reconnect = %v, %v; want the new connection", l2.c == second, err)
	}
}
