package zkserver

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestLinkThatLostBytesNeverDeliversMore: a connection whose bytes a
// blackhole dropped has a hole in its stream, and nothing sent after the
// hole may reach the other side — once the proxy forwards again, it is
// reset, not resumed. Restore switches the mode back to forward before it
// closes such connections; bytes read in between (the state this test
// holds the proxy in) must not be delivered: a ZooKeeper follower handed
// a proposal after a gap logs it, and applies it without those before it.
func TestLinkThatLostBytesNeverDeliversMore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// What the server reads, chunk by chunk; closed at the end of the
	// stream.
	got := make(chan []byte, 16)
	go func() {
		defer close(got)
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		for {
			b := make([]byte, 64)
			n, err := s.Read(b)
			if n > 0 {
				got <- b[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	p, c := proxied(t, ln.Addr().String())
	lost := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for l := range p.links {
			if l.lost {
				return true
			}
		}
		return false
	}
	write := func(s string) {
		t.Helper()
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("before ")
	time.Sleep(100 * time.Millisecond) // forwarded before the blackhole
	p.Blackhole()
	write("dropped ")
	for deadline := time.Now().Add(10 * time.Second); !lost(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the blackhole never dropped the bytes")
		}
	}
	// Forwarding again, the lost connection not closed yet: Restore
	// between its switch of mode and its closing of the connections.
	p.mu.Lock()
	p.mode = modeForward
	p.mu.Unlock()
	write("after")
	var read []byte
	timeout := time.After(10 * time.Second)
	for ended := false; !ended; {
		select {
		case b, ok := <-got:
			read = append(read, b...)
			ended = !ok
		case <-timeout:
			t.Fatalf("the connection with a hole was left open; the server read %q", read)
		}
	}
	if string(read) != "before " {
		t.Fatalf("the server read %q; want only what came before the hole, %q", read, "before ")
	}
	// The client's side is reset too.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the client's side of a connection with a hole is still open: %v", err)
	}
}

// TestRequestDeliveredWhileDroppingRepliesLosesItsAnswer: a request the
// proxy delivers while it drops replies loses its answer even when the
// server sends that answer only after Restore: Restore closes the
// connection, and the answer never reaches the client.
func TestRequestDeliveredWhileDroppingRepliesLosesItsAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	request := make(chan net.Conn, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		if _, err := s.Read(make([]byte, 64)); err != nil {
			s.Close()
			return
		}
		request <- s // answered once the proxy forwards again
	}()
	p, c := proxied(t, ln.Addr().String())
	p.DropReplies()
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	var s net.Conn
	select {
	case s = <-request:
		defer s.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not delivered")
	}
	p.Restore()
	_, _ = s.Write([]byte("answer")) // the connection may be closed already
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 64))
	if n > 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the client read %d bytes, %v; want its connection closed without the answer", n, err)
	}
}

// proxied starts a proxy in front of target and connects to it; both end
// with the test.
func proxied(t *testing.T, target string) (*Proxy, net.Conn) {
	t.Helper()
	p, err := NewProxy([]string{target})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, err := net.Dial("tcp", p.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}
