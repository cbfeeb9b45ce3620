package zkserver

import (
	"encoding/binary"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"
)

// echo serves a TCP echo on loopback until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return l.Addr().String()
}

// roundTrips returns the sorted round trips of n one-byte pings on c.
func roundTrips(t *testing.T, c net.Conn, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	b := []byte{1}
	for range n {
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(start))
	}
	slices.Sort(out)
	return out
}

// TestProxyDelayIsPrecise: a delay of 250 µs each way adds 500 µs to a
// round trip, not the runtime timers' millisecond each way. The proxy's
// own account of lateness is checked against the round trips seen.
func TestProxyDelayIsPrecise(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	target := echo(t)
	p, c := proxied(t, target)
	direct, err := net.Dial("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	roundTrips(t, c, 200) // warm up
	var ru0, ru1 syscall.Rusage
	cpuPer := func(n int) time.Duration {
		return time.Duration(syscall.TimevalToNsec(ru1.Utime)+syscall.TimevalToNsec(ru1.Stime)-
			syscall.TimevalToNsec(ru0.Utime)-syscall.TimevalToNsec(ru0.Stime)) / time.Duration(n)
	}
	roundTrips(t, direct, 200)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	none := roundTrips(t, direct, 2000)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	noneCPU := cpuPer(len(none))
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	base := roundTrips(t, c, 2000)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	baseCPU := cpuPer(len(base))
	const d = 250 * time.Microsecond
	p.Delay(d)
	ProxyLateness(p, true)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	delayed := roundTrips(t, c, 2000)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	late := ProxyLateness(p, false)
	cpu := cpuPer(len(delayed))
	added := delayed[len(delayed)/2] - base[len(base)/2]
	t.Logf("round trip p50 %v without delay, %v with %v each way: %v added (want %v); p99 %v; lateness per chunk p50 %v p99 %v over %d chunks; CPU of the process (echo, client and proxy) per round trip %v, %v without delay, %v without the proxy (round trip %v)",
		base[len(base)/2], delayed[len(delayed)/2], d, added, 2*d, delayed[len(delayed)*99/100], late.P50, late.P99, late.Chunks, cpu, baseCPU, noneCPU, none[len(none)/2])
	if late.Chunks != int64(2*len(delayed)) {
		t.Errorf("%d delayed chunks counted, want %d", late.Chunks, 2*len(delayed))
	}
	// Robust on a loaded machine: the runtime's timers would add 1-2 ms
	// per round trip; a precise delay adds about 500 µs. A chunk's delay
	// runs from the moment it was read, so the proxy's own forwarding,
	// part of the round trip without delay, can fall within it: the delay
	// may add up to that much less.
	if added < 2*d-base[len(base)/2]-20*time.Microsecond || added > 2*d+300*time.Microsecond {
		t.Errorf("the delay added %v to the p50 round trip, want about %v", added, 2*d)
	}
}

// TestCountingProxyFrames: the counting proxy tells requests, replies,
// notifications and pings apart, and counts a pipelined pair of requests
// as one burst.
func TestCountingProxyFrames(t *testing.T) {
	p, err := NewCountingProxy([]string{echo(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frame := func(words ...int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(4*len(words)))
		for _, w := range words {
			b = binary.BigEndian.AppendUint32(b, uint32(w))
		}
		return b
	}
	var events []WireEvent
	LogWire(p, func(ev WireEvent) { events = append(events, ev) })
	// The echo returns what the client sends; seen from the proxy, the
	// echoed frames are the server's: a connect response, replies (xid,
	// zxid, err), a notification (xid -1) and a ping's answer.
	send := func(b []byte) {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, len(b))); err != nil {
			t.Fatal(err)
		}
	}
	send(frame(0, 0, 0, 0, 0))                                                   // handshake
	send(append(frame(1, 1, 0, 0), frame(2, 8, 0, 0)...))                        // create and listing, back to back
	send(frame(3, 2, 0, 0))                                                      // a delete alone
	send(frame(-2, 11, 0, 0))                                                    // a ping
	send(frame(-1, 0, 0, 0))                                                     // echoed as a notification
	want := Wire{Requests: 4, Replies: 3, Notifications: 1, Pings: 1, Bursts: 3} // the -1 sent counts as a request
	if got := ProxyWire(p); got != want {
		t.Fatalf("counted %+v, want %+v", got, want)
	}
	if len(events) == 0 || !events[0].ToServer || events[0].Xid != 1 || events[0].Op != 1 {
		t.Fatalf("first event %+v, want the create sent", events)
	}
}
