package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Requests go-zookeeper cannot send, sent on its own connection.
//
// go-zookeeper v1.0.4 knows neither multiRead (many reads in one request,
// ZooKeeper 3.6+) nor a setWatches of its own choosing (it sends one only
// to restore its watches after a reconnect). The tracker writes such
// requests into go-zookeeper's connection itself and takes their replies
// out of the stream before go-zookeeper reads it:
//
//   - Their xids are negative, from a range go-zookeeper never uses: it
//     counts its own up from 1, and the special ones are -1
//     (notification), -2 (ping), -4 (auth) and -8 (setWatches, in the
//     Java client). ZooKeeper echoes the xid and treats a request with
//     xid <= 0 like any other (it only leaves it out of its count of a
//     connection's outstanding requests).
//   - Each is written whole, under the same lock as go-zookeeper's
//     writes (go-zookeeper writes each request with one Write), and takes
//     its place in the tracker's list of requests awaiting an answer, so
//     the matching of replies to send times, on which the session deadline
//     rests, counts it as any other. Its reply is matched by its xid, and
//     it is answered exactly once: by its reply, or by the failure of its
//     connection.
//   - Not before go-zookeeper's credentials. On a new connection
//     go-zookeeper sends its credentials again (auth requests, one after
//     another, each once the last is answered) before any other request:
//     a read written before them would run without them (NoAuth). The
//     tracker knows how many it holds (the most auth requests answered OK
//     on one connection) and writes no injected request on a connection
//     until that many were answered OK on it, or go-zookeeper wrote a
//     request of another kind there (its send loop runs only once its
//     credentials are answered).
//   - The caller never writes. Each request waits, in order, in its
//     connection's queue, and the connection's writer writes them: a
//     goroutine started when the queue has requests that may be written,
//     ended when it is empty. A caller waits for its answer and for its
//     context, never for a socket: a server that stops reading holds the
//     writer, never a cache's read that gave up, nor go-zookeeper's
//     handshake callback (which registers the client's own watches again).
//     The tracker counts its writers: the client's Close closes the
//     handle's connections, which fails a write in progress at once, and
//     waits for them (Tracker.Close).
//   - Every write of the tracker's own has a deadline (two thirds of the
//     session timeout, go-zookeeper's own bound): a stuck socket fails the
//     connection rather than block go-zookeeper's loops waiting for the
//     write lock for longer.
//   - Read buffers what the server sends and parses its frames: a reply
//     to an injected request is handed to its caller, never to
//     go-zookeeper; the rest passes unchanged. (go-zookeeper reads a frame
//     with two reads; from the buffer they cost no system call.)
//   - An injected request is only ever sent on the connection whose
//     handshake was answered last, on the handle's one session (the
//     tracker refuses any other). When that connection fails, every
//     injected request still unanswered on it fails with
//     zk.ErrConnectionClosed: it is never sent again.
//   - go-zookeeper does not see the zxids of those replies. So that a
//     reconnect never lands on a server behind what was read, the
//     handshake's lastZxidSeen is raised to the newest of them.

// injXidBase is the highest xid of an injected request; they go down from
// it and wrap within 1<<29 of it, far from go-zookeeper's and the special
// ones.
const injXidBase = -(1 << 20)

func isInjectedXid(xid int32) bool { return xid <= injXidBase }

// injected is one request of the tracker's own awaiting its reply. done
// is called once: with the reply's header fields and body (valid during
// the call only), or with an error. It runs on go-zookeeper's receive
// goroutine, or wherever the connection is found failed, and must not
// block or call the client.
type injected struct {
	done    func(zxid int64, code int32, body []byte, err error)
	written func() // called by the writer as it writes the request; nil for none
}

// errInjectLost fails an injected request whose connection failed before
// its reply was read.
var errInjectLost = errtext.Errorf("connection: connection lost before the answer: %w", zk.ErrConnectionClosed)

// ErrNotConnected refuses a request of the tracker's own (Send) while the
// handle has no connection with its session.
var ErrNotConnected = errtext.Errorf("connection: not connected: %w", zk.ErrConnectionClosed)

// Done is told the answer to a request of the tracker's own (Send): the
// reply's zxid, error code and body (valid during the call only), or err
// when no reply was read. It runs on go-zookeeper's receive goroutine, or
// wherever the connection is found failed, and must not block or call the
// client.
type Done func(zxid int64, code int32, body []byte, err error)

// Send queues request b (a whole frame, its xid field to be filled) on
// the handle's current connection, provided the handle's session is
// session: the requests go-zookeeper cannot send (EncodeMultiRead,
// EncodeSetWatches, EncodeSync). done is called exactly once, with the
// reply or the failure of the connection (an error wrapping
// zk.ErrConnectionClosed: the request is never sent again), unless Send
// returns an error (then never). Send never blocks on the socket.
func (t *Tracker) Send(session int64, b []byte, done Done) error {
	return t.inject(session, b, &injected{done: done})
}

// SendWritten is Send that also calls written, once, as the request is
// written — from the connection's writer, before the bytes go, so that a
// request written on the connection after written was called (one of
// go-zookeeper's, or one sent with Send) goes out behind it. written is
// not called for a request dropped before its turn to be written; when it
// was called and the write then fails, the connection closes and the
// request is answered with the connection's error, as one whose answer
// was lost. It must not block.
func (t *Tracker) SendWritten(session int64, b []byte, written func(), done Done) error {
	return t.inject(session, b, &injected{done: done, written: written})
}

// inject queues request b (a whole frame, its xid field to be filled) on
// the handle's current connection, provided the handle's session is
// session; the connection's writer writes it, once go-zookeeper's
// credentials are answered there. r.done is called exactly once, unless
// inject returns an error (then never). inject never blocks on the
// socket.
func (t *Tracker) inject(session int64, b []byte, r *injected) error {
	if t.spent.Load() || session == 0 || t.first.Load() != session {
		return ErrNotConnected
	}
	t.mu.Lock()
	c := t.cur
	t.mu.Unlock()
	if c == nil {
		return ErrNotConnected
	}
	return c.inject(b, r)
}

func (t *Tracker) nextInjXid() int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.injXid = (t.injXid + 1) % (1 << 29)
	return int32(injXidBase - int64(t.injXid))
}

// queued is an injected request waiting to be written.
type queued struct {
	b   []byte
	xid int32
	r   *injected
}

func (c *trackedConn) inject(b []byte, r *injected) error {
	if len(b) < 12 || int(binary.BigEndian.Uint32(b[0:4])) != len(b)-4 {
		return errMalformed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead || c.out.frames == 0 {
		return ErrNotConnected
	}
	xid := c.t.nextInjXid()
	binary.BigEndian.PutUint32(b[4:8], uint32(xid))
	c.noteSetWatches(b)
	c.queue = append(c.queue, queued{b, xid, r})
	c.kickLocked()
	return nil
}

// openLocked lets injected requests be written on c, and starts the
// writing of those waiting; c.mu is held.
func (c *trackedConn) openLocked() {
	c.open = true
	c.t.mu.Lock()
	if c.t.opened != nil {
		close(c.t.opened)
		c.t.opened = nil
	}
	c.t.mu.Unlock()
	c.kickLocked()
}

// kickLocked starts the writer of the injected requests waiting on c, if
// they may be written; c.mu is held. No writer starts once the tracker is
// closed: its connections are closed too, which fails what waits.
func (c *trackedConn) kickLocked() {
	if !c.open || len(c.queue) == 0 || c.flushing || c.dead {
		return
	}
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if c.t.closed {
		return
	}
	c.flushing = true
	c.t.writers.Add(1)
	go c.flush()
}

// flush is c's writer: it writes the injected requests waiting on c until
// none is left, or c fails.
func (c *trackedConn) flush() {
	defer c.t.writers.Done()
	for {
		c.wmu.Lock()
		c.mu.Lock()
		q := c.queue
		c.queue = nil
		if n := batchOf(q); n < len(q) {
			// The rest after these bytes: go-zookeeper's writes (its
			// pings) take their turn in between, and a server that
			// reads slowly (it stops reading a connection with many
			// requests outstanding) gets each batch within the write's
			// deadline.
			q, c.queue = q[:n], q[n:]
		}
		if len(q) == 0 || c.dead || !c.out.atBoundary() {
			c.flushing = false
			c.queue = append(q, c.queue...)
			c.mu.Unlock()
			c.wmu.Unlock()
			if len(q) > 0 {
				c.Close() // not at a frame's boundary: cannot happen
			}
			return
		}
		now := int64(c.t.mono()) + 1
		var (
			buf     []byte
			written []func()
		)
		for _, e := range q {
			c.out.feed(e.b, func([]byte) { c.sent = append(c.sent, sentReq{at: now, inj: e.r, xid: e.xid}) })
			buf = append(buf, e.b...)
			if e.r.written != nil {
				written = append(written, e.r.written)
			}
		}
		c.mu.Unlock()
		for _, f := range written {
			// Under wmu and no other lock of the connection's: what f
			// sends is written after these bytes.
			f()
		}
		err := c.writeOwn(buf)
		c.wmu.Unlock()
		if err != nil {
			c.Close()
			return
		}
	}
}

// maxBatch bounds the bytes of one write of the tracker's own.
const maxBatch = 64 << 10

// batchOf returns how many of the requests of q, at least one, the writer
// writes at once.
func batchOf(q []queued) int {
	size := 0
	for i, e := range q {
		if size += len(e.b); size > maxBatch && i > 0 {
			return i
		}
	}
	return len(q)
}

// ownWriteBound bounds a write of the tracker's own before the session
// timeout is known.
const ownWriteBound = 10 * time.Second

// writeOwn writes b, whole frames of the tracker's own, with a deadline;
// c.wmu is held.
func (c *trackedConn) writeOwn(b []byte) error {
	d := c.t.Timeout() * 2 / 3
	if d <= 0 {
		d = ownWriteBound
	}
	c.dl.Lock()
	c.ownDeadline = time.Now().Add(d)
	_ = c.Conn.SetWriteDeadline(c.ownDeadline)
	c.dl.Unlock()
	_, err := c.Conn.Write(b)
	c.dl.Lock()
	c.ownDeadline = time.Time{}
	_ = c.Conn.SetWriteDeadline(c.zkDeadline)
	c.dl.Unlock()
	return err
}

// SetWriteDeadline is go-zookeeper's: it sets one before each write and
// clears it after, and may do so while a write of the tracker's own is
// under way (go-zookeeper's write then waits for the write lock), which
// keeps its deadline, or an earlier one.
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	c.dl.Lock()
	defer c.dl.Unlock()
	c.zkDeadline = t
	if !c.ownDeadline.IsZero() && (t.IsZero() || c.ownDeadline.Before(t)) {
		return nil // set when the tracker's write ends
	}
	return c.Conn.SetWriteDeadline(t)
}

// Close fails the injected requests awaiting an answer on c.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.failInjected()
	c.t.mu.Lock()
	delete(c.t.conns, c)
	c.t.mu.Unlock()
	return err
}

// close ends the handle for good: no connection is made on it any more,
// every connection it has is closed (a write in progress on one fails at
// once, whatever its deadline), and close returns once every writer of
// the tracker's own requests has returned. It is idempotent.
func (t *Tracker) Close() {
	t.spent.Store(true)
	t.mu.Lock()
	t.closed = true
	conns := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	t.writers.Wait()
}

// Drop closes the handle's connections and not the handle: go-zookeeper
// connects again, in the same session, to the server its host provider
// names next. Requests in flight on them fail as on any lost connection.
func (t *Tracker) Drop() {
	t.mu.Lock()
	conns := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// failInjected marks c failed and fails every injected request awaiting
// an answer on it.
func (c *trackedConn) failInjected() {
	c.mu.Lock()
	c.dead = true
	var lost []*injected
	for i := range c.sent {
		if c.sent[i].inj != nil {
			lost = append(lost, c.sent[i].inj)
			c.sent[i].inj = nil
		}
	}
	for _, e := range c.queue {
		lost = append(lost, e.r)
	}
	c.queue = nil
	c.t.mu.Lock()
	if c.t.cur == c {
		c.t.cur = nil
	}
	c.t.mu.Unlock()
	c.mu.Unlock()
	for _, r := range lost {
		r.done(0, 0, nil, errInjectLost)
	}
}

// hideZxid takes the zxid out of the header of a reply to one of
// go-zookeeper's requests (zxid, the 8 bytes of it in the read buffer)
// before go-zookeeper reads it: the tracker keeps it (seenZxid, and
// frameZxid for the reply's own bookkeeping, answeredHead), and writes 0
// in its place.
//
// go-zookeeper v1.0.4 stores each reply's zxid in a field its reconnect
// reads, unsynchronized, on another goroutine (sendSetWatches reads it
// while the new connection's receive loop may already be storing: a data
// race, go-zookeeper PR #35, never merged). A zxid of 0 is never stored,
// and nothing of go-zookeeper's reads a reply's zxid otherwise (its
// requests return it, and every call drops it). The two things it was
// kept for are the tracker's: the connect request's lastZxidSeen
// (raiseLastZxid: the newest zxid of any reply) and the relative zxid of a
// setWatches (noteSetWatches: the zxid of the last reply, as go-zookeeper
// kept it, and no newer than goodZxid).
func (c *trackedConn) hideZxid(zxid []byte) {
	z := int64(binary.BigEndian.Uint64(zxid))
	if z <= 0 {
		return
	}
	c.frameZxid = z
	c.t.sawZxid(z)
	c.t.lastReply.Store(z)
	clear(zxid)
}

// pingXid is the xid of go-zookeeper's pings and of their answers.
const pingXid = -2

// pingZxid records the zxid of a ping's answer (zxid, its 8 bytes): the
// zxid the server has applied. It is heard as any reply's (seenZxid): the
// next handshake carries it, so that a restored database, which has not
// applied it, refuses to resume the session, and a new session's history
// check compares with it — a client that only pings would otherwise offer
// the zxid of its last request, from before any backup. It is left to
// go-zookeeper, which does not read it, and out of lastReply, which a
// setWatches carries (restore.go: a watch set on a server behind must not
// be taken as registered up to a ping's zxid).
func (c *trackedConn) pingZxid(zxid []byte) {
	if z := int64(binary.BigEndian.Uint64(zxid)); z > 0 {
		c.t.sawZxid(z)
	}
}

// sawZxid raises seenZxid to zxid.
func (t *Tracker) sawZxid(zxid int64) {
	for {
		old := t.seenZxid.Load()
		if zxid <= old || t.seenZxid.CompareAndSwap(old, zxid) {
			return
		}
	}
}

// raiseLastZxid writes into the connect request at the start of b
// ([len][protocolVersion int32][lastZxidSeen int64]...) the newest zxid
// of a reply, if go-zookeeper's is older (it is 0: hideZxid).
func (t *Tracker) raiseLastZxid(b []byte) {
	const at = 4 + 4
	if len(b) < at+8 {
		return
	}
	if seen := t.seenZxid.Load(); seen > int64(binary.BigEndian.Uint64(b[at:at+8])) {
		binary.BigEndian.PutUint64(b[at:at+8], uint64(seen))
	}
}

// reader is what Read holds of the server's stream.
type reader struct {
	buf    []byte // buf[r:w] is read from the socket and not yet handed on
	r, w   int
	pass   int   // bytes of the current frame still to hand to go-zookeeper
	skip   int   // bytes of an injected reply too long for the client still to drop
	frames int   // frames begun
	full   bool  // the last read filled the buffer
	err    error // of the socket, once its bytes are handed on
}

const (
	minReadChunk = 4 << 10
	readChunk    = 64 << 10
)

func (c *trackedConn) Read(b []byte) (int, error) {
	rd := &c.rd
	for {
		avail := rd.w - rd.r
		switch {
		case rd.pass > 0 && avail > 0:
			n := min(len(b), rd.pass, avail)
			copy(b, rd.buf[rd.r:rd.r+n])
			rd.r += n
			rd.pass -= n
			c.mu.Lock()
			if c.in.grow == nil {
				c.in.grow = c.isCreate2Reply
				if c.t.maxReply > 0 {
					c.in.maxLen, c.in.overLen = c.t.maxReply, c.overLong
				}
			}
			c.in.feed(b[:n], c.reply)
			c.mu.Unlock()
			return n, nil
		case rd.skip > 0 && avail > 0:
			n := min(rd.skip, avail)
			rd.r += n
			rd.skip -= n
			continue
		case rd.pass == 0 && rd.skip == 0 && avail >= 4:
			l := int(int32(binary.BigEndian.Uint32(rd.buf[rd.r:])))
			if rd.frames == 0 || l < 4 {
				// The handshake, or a frame too short to be a reply.
				rd.frames++
				rd.pass = 4 + max(l, 0)
				continue
			}
			if avail < 8 {
				break
			}
			xid := int32(binary.BigEndian.Uint32(rd.buf[rd.r+4:]))
			if !isInjectedXid(xid) {
				if (xid >= 0 || xid == pingXid) && l >= 12 && avail < 16 {
					break // the zxid is still to come
				}
				if xid == notificationXid && c.t.onNotification != nil && (c.t.maxReply <= 0 || l <= c.t.maxReply) {
					if avail < 4+l {
						// The whole notification first: its path is
						// told before go-zookeeper reads it.
						rd.grow(4 + l)
						break
					}
					c.t.notify(rd.buf[rd.r+4 : rd.r+4+l])
				}
				rd.frames++
				rd.pass = 4 + l
				c.frameZxid = 0
				switch {
				case xid >= 0 && l >= 12:
					c.hideZxid(rd.buf[rd.r+8 : rd.r+16])
				case xid == pingXid && l >= 12:
					c.pingZxid(rd.buf[rd.r+8 : rd.r+16])
				}
				continue
			}
			if c.t.maxReply > 0 && l > c.t.maxReply {
				rd.frames++
				rd.skip = 4 + l
				c.injectedReply(xid, nil, errtext.Errorf("%w (%d bytes, the client's bound %d)", ErrReplyTooLarge, l, c.t.maxReply))
				continue
			}
			if avail >= 4+l {
				rd.frames++
				frame := rd.buf[rd.r+4 : rd.r+4+l]
				rd.r += 4 + l
				c.injectedReply(xid, frame, nil)
				continue
			}
			rd.grow(4 + l)
		}
		if rd.err != nil {
			return 0, rd.err
		}
		// Read more. The buffer starts small (a client of many idle
		// sessions keeps one each) and grows while reads fill it.
		if rd.r == rd.w {
			rd.r, rd.w = 0, 0
			switch {
			case len(rd.buf) > 4*readChunk:
				rd.buf = nil // let a large reply's buffer go
			case rd.full && len(rd.buf) < readChunk:
				rd.buf = make([]byte, 2*len(rd.buf))
			}
		}
		if rd.buf == nil {
			rd.buf = make([]byte, minReadChunk)
		}
		if rd.w == len(rd.buf) {
			nb := rd.buf
			if rd.full && len(rd.buf) < readChunk {
				nb = make([]byte, 2*len(rd.buf))
			}
			rd.w = copy(nb, rd.buf[rd.r:rd.w])
			rd.r, rd.buf = 0, nb
		}
		n, err := c.Conn.Read(rd.buf[rd.w:])
		rd.full = rd.w+n == len(rd.buf)
		rd.w += n
		if err != nil {
			c.failInjected()
			if n == 0 {
				return 0, err
			}
			rd.err = err
		}
	}
}

// grow makes room in the buffer for a frame of need bytes that starts at
// r.
func (rd *reader) grow(need int) {
	if len(rd.buf) < need {
		nb := make([]byte, max(need, minReadChunk))
		rd.w = copy(nb, rd.buf[rd.r:rd.w])
		rd.r, rd.buf = 0, nb
	}
}

// injectedReply handles the reply to injected request xid: frame is its
// body ([xid][zxid int64][err int32][body]), or err says why it could not
// be read.
func (c *trackedConn) injectedReply(xid int32, frame []byte, err error) {
	c.mu.Lock()
	c.answeredHead(xid, frame)
	s, ok := c.takeSent(xid, true)
	c.mu.Unlock()
	r := s.inj
	if !ok || r == nil {
		// No injected request awaits this reply: the stream is not what
		// it should be; drop the connection.
		c.Close()
		return
	}
	if err != nil || len(frame) < 16 {
		if err == nil {
			err = errtext.Errorf("connection: short reply: %w", io.ErrUnexpectedEOF)
		}
		r.done(0, 0, nil, err)
		return
	}
	zxid := int64(binary.BigEndian.Uint64(frame[4:12]))
	c.t.sawZxid(zxid)
	if zxid > 0 {
		c.t.lastReply.Store(zxid)
	}
	r.done(zxid, int32(binary.BigEndian.Uint32(frame[12:16])), frame[16:], nil)
}

// errMalformed refuses a request that is not a whole frame.
var errMalformed = errors.New("connection: malformed request of the tracker's own")

// ErrReplyTooLarge fails a request of the tracker's own whose reply is
// longer than Config.MaxReply (connection.ErrResponseTooLarge).
var ErrReplyTooLarge = errors.New("connection: answer larger than the client's buffer")

// errInjectedProtocol is a reply that does not parse.
var errInjectedProtocol = errors.New("connection: malformed reply to a bulk request")
