package testkit

import (
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// StallNet is the network between a client under test and a real server
// (give its Dial to connection.WithDialer), with a fault a test places
// at an exact moment: the server stops reading. Its connections are
// plain TCP connections with a small send buffer, so that a few hundred
// kilobytes the server does not read fill the socket buffers and block
// the client's write, as against a server that stopped reading; no byte
// is changed or held back.
type StallNet struct {
	mu      sync.Mutex
	conns   []net.Conn
	match   func(b []byte) bool
	stop    func() error
	stopped chan struct{}
	err     error
	since   map[*stallConn]time.Time // writes in progress, since when
}

// stallSendBuffer is the send buffer of StallNet's connections (the
// kernel doubles it).
const stallSendBuffer = 32 << 10

// Dial dials addr over TCP, with net.DialTimeout's shape.
func (n *StallNet) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(stallSendBuffer)
	}
	sc := &stallConn{Conn: c, n: n}
	n.mu.Lock()
	n.conns = append(n.conns, c)
	n.mu.Unlock()
	return sc, nil
}

// StopServerOn has stop called (say, the ensemble's Pause), once, just
// before the first write that match accepts is sent: that write and those
// after it go to a server that no longer reads.
func (n *StallNet) StopServerOn(match func(b []byte) bool, stop func() error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.match, n.stop = match, stop
	n.stopped = make(chan struct{})
}

// Stopped is closed once stop was called; Err then returns its error.
func (n *StallNet) Stopped() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopped
}

// Err returns the error of stop.
func (n *StallNet) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Blocked returns how long the oldest write in progress has lasted, 0
// when none is.
func (n *StallNet) Blocked() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	var d time.Duration
	for _, at := range n.since {
		d = max(d, time.Since(at))
	}
	return d
}

// Reset closes the connections made so far, as a network reset would:
// the client sees its connection drop and connects again.
func (n *StallNet) Reset() {
	n.mu.Lock()
	conns := n.conns
	n.conns = nil
	n.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

type stallConn struct {
	net.Conn
	n *StallNet
}

func (c *stallConn) Write(b []byte) (int, error) {
	n := c.n
	n.mu.Lock()
	if n.match != nil && n.match(b) {
		stop, stopped := n.stop, n.stopped
		n.match = nil
		n.mu.Unlock()
		err := stop()
		n.mu.Lock()
		n.err = err
		close(stopped)
	}
	if n.since == nil {
		n.since = map[*stallConn]time.Time{}
	}
	n.since[c] = time.Now()
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.since, c)
		n.mu.Unlock()
	}()
	return c.Conn.Write(b)
}

// Opcode returns the opcode of the ZooKeeper request that starts b
// ([len][xid][opcode]...), or 0 if b is shorter than its header.
func Opcode(b []byte) int32 {
	if len(b) < 12 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b[8:12]))
}
