package wire

import "time"

// A bound on the handshake's answer.
//
// go-zookeeper waits for the answer to its connect request ten times its
// read timeout (6⅔ session timeouts) before it tries another server: the
// header with that deadline, the body with none. A server that made the
// session and does not answer (a new ensemble's leader that committed the
// session on its followers and did not apply it itself) would hold Open
// that long, and a session of the handle being resumed would expire
// meanwhile, while another server of the list could have taken it.
// (ZooKeeper 3.6.0 to 3.8.0 can leave a committed request unapplied until
// the next request comes, ZOOKEEPER-4537: the leader of a new ensemble
// applied the session's creation 15 s late, when its expiry came.)
// The Java client bounds the connect and its answer by the session
// timeout shared among the servers, so that each of them is tried within
// one timeout; so does the tracker, on the read deadline of a connection
// whose handshake is unanswered. A timeout fails go-zookeeper's read; it
// drops the connection and tries the next server (a new session if the
// handshake asked for one: the one the silent server may have made has
// nothing in it, and expires).

// HandshakeBound is how long a connection waits for the answer to its
// handshake: the session timeout shared among the servers, as in the Java
// client, and never less than the dial timeout.
func HandshakeBound(sessionTimeout time.Duration, servers int, dialTimeout time.Duration) time.Duration {
	return max(sessionTimeout/time.Duration(max(servers, 1)), dialTimeout)
}

// SetReadDeadline is go-zookeeper's. While the connection's handshake is
// unanswered the tracker's bound on it stands, unless go-zookeeper's own
// deadline is earlier.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	c.rdl.Lock()
	defer c.rdl.Unlock()
	c.zkReadDeadline = t
	return c.Conn.SetReadDeadline(c.readDeadlineLocked())
}

func (c *trackedConn) readDeadlineLocked() time.Time {
	t, h := c.zkReadDeadline, c.handshakeDeadline
	if !h.IsZero() && (t.IsZero() || h.Before(t)) {
		return h
	}
	return t
}

// handshakeWritten starts the bound on the handshake's answer, as the
// connect request is written.
func (c *trackedConn) handshakeWritten() {
	d := c.t.handshake
	if d <= 0 {
		return
	}
	c.rdl.Lock()
	defer c.rdl.Unlock()
	c.handshakeDeadline = time.Now().Add(d)
	_ = c.Conn.SetReadDeadline(c.readDeadlineLocked())
}

// handshakeAnswered ends the bound: go-zookeeper's deadline alone stands.
func (c *trackedConn) handshakeAnswered() {
	c.rdl.Lock()
	defer c.rdl.Unlock()
	if c.handshakeDeadline.IsZero() {
		return
	}
	c.handshakeDeadline = time.Time{}
	_ = c.Conn.SetReadDeadline(c.zkReadDeadline)
}
