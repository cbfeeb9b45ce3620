package wire

import (
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Tracker watches the bytes of one go-zookeeper connection handle (all of
// its TCP connections, one after another) to learn what go-zookeeper does
// not expose:
//
//   - the session ID and negotiated timeout of each handshake,
//   - lastHeard: the send time of the newest request the server answered,
//     on the monotonic clock, and
//   - whether the handle is spent: it had a session and that session ended.
//
// One handle, one session. go-zookeeper opens a new session on the same
// handle after an expiry and then sends the requests that were queued for
// the old one: a delete meant for the old session's node would run in the
// new session and could remove another client's node. The tracker refuses
// that handshake (a connect request that does not resume the handle's
// session), so a request queued on a handle can only ever run in the
// handle's one session; the client opens a new handle for the next one.
//
// Why the send time and not the time the answer arrived: the server resets
// a session's expiry whenever it receives a packet from the client. If the
// answer to a request sent at w arrived, the server received that request
// at or after w, so it cannot expire the session before w + timeout. That
// bound is what makes the local LOST deadline safe: a lock holder is told no
// later than the server can expire its session and let another client take
// the lock. The server rounds expiry up to its next tick, which only moves
// it later. One case escapes the bound: a follower cut off from the leader
// goes on answering pings, which the leader never hears of, until it
// notices the loss (syncLimit × tickTime); a session timeout below that can
// expire on the leader while this client hears answers (docs/safety.md).
//
// ZooKeeper answers a connection's requests one reply each, echoing the
// request's xid, with watch notifications (xid -1) interleaved. It answers
// them in order but for the requests it handles as they arrive, outside its
// request pipeline (ZooKeeperServer.processPacket: auth, opcode 100, and
// sasl, which go-zookeeper does not send): their reply can overtake those
// of requests written before them. go-zookeeper resends its credentials on
// every new connection, so that happens after each reconnect of a client
// with credentials. Replies are matched to requests by xid (pings, xid -2,
// in order among themselves); a reply whose xid names no request awaiting
// one answers the oldest of go-zookeeper's, never one of the tracker's own.
//
// It also gives protected creates their node's Stat for free. ZooKeeper
// (3.5 and later) has create2, a create whose reply carries the new node's
// Stat; go-zookeeper only sends plain creates. The body of both requests is
// the same, so the tracker turns a create of a protected name into a
// create2 on the wire and reads the Stat from the reply; go-zookeeper reads
// the path, which comes first, and ignores the rest. CreateProtected then
// knows the node's czxid (the fencing token) and its owner without a read.
//
// And it decides, as each guarded transaction is written, whether its
// hold is still on (Guards, guards.go): a transaction written after its hold
// ended carries a check no node passes.
//
// And it sends requests of its own on go-zookeeper's connection, which
// go-zookeeper cannot send (multiRead, setWatches, sync: inject.go, codec.go),
// and takes their replies out of the stream before go-zookeeper reads it.
type Tracker struct {
	sessionID atomic.Int64 // of the newest handshake; 0 after an expiry answer
	first     atomic.Int64 // the handle's one session, once it has one
	spent     atomic.Bool  // that session ended: no new handshake, no new dial
	timeoutMS atomic.Int64
	handshake time.Duration // bound on a handshake's answer (handshake.go); 0: go-zookeeper's alone
	lastHeard atomic.Int64  // mono() nanoseconds + 1; 0 before any answer
	mono      func() time.Duration

	// Counters shared with the client; nil in unit tests.
	notifications, replies *atomic.Int64

	// maxReply is the client's bound on a reply (WithMaxBufferSize), 0 for
	// none. With a bound, the tracker notes every request and tells
	// tooLarge the key (requestKey) of a request whose reply exceeds it:
	// go-zookeeper drops the connection on such a reply, and the request
	// fails as if the connection were lost, while trying again only
	// drops the next connection too.
	maxReply int
	tooLarge func(key string)

	// guards resolves the checks of guarded transactions as they are
	// written (Guard); nil in unit tests of other things.
	guards *Guards

	mu         sync.Mutex
	created    map[string]Created     // server path -> Stat of a create2 reply
	written    map[string]writtenHook // server path of a create -> called once it is written (WhenWritten)
	writtenSeq uint64
	restore    restoreState // the current connection's setWatches (restore.go)
	// goodZxid is the newest zxid of a reply heard on a restored
	// connection: every watch was registered on the server up to it
	// (restore.go).
	goodZxid int64

	// onRestored is told when the current connection is restored; it
	// must not block.
	onRestored func()
	// onNotification is told every watch notification (persistent.go);
	// it must not block.
	onNotification func(typ zk.EventType, state zk.State, path string)

	// The tracker's own requests (inject.go), under mu but for the atomics.
	cur       *trackedConn              // the connection whose handshake was answered last, until it fails
	conns     map[*trackedConn]struct{} // the connections dialed and not closed
	closed    bool                      // close was called: no connection, no writer any more
	writers   sync.WaitGroup            // the connections' writers (flush)
	injXid    uint32                    // numbers the injected requests
	opened    chan struct{}             // closed when a connection next lets injected requests be written (Link); nil until asked for
	seenZxid  atomic.Int64              // the newest zxid of a reply: the next handshake's lastZxidSeen (raiseLastZxid)
	lastReply atomic.Int64              // the zxid of the last reply read (not the newest: a server behind may answer after one ahead), as go-zookeeper kept it
	// creds is the most auth requests answered OK on one connection: the
	// credentials go-zookeeper holds and sends again on a new connection
	// before anything else (inject.go).
	creds int
}

func count(n *atomic.Int64) {
	if n != nil {
		n.Add(1)
	}
}

// Config is what the client tells the tracker of a new handle.
type Config struct {
	// Notifications and Replies count the watch notifications and the
	// replies read; nil: not counted.
	Notifications, Replies *atomic.Int64
	// Handshake bounds the wait for a handshake's answer (HandshakeBound);
	// 0: go-zookeeper's bound alone.
	Handshake time.Duration
	// MaxReply is the client's bound on a reply, 0 for none. With one,
	// TooLarge is told the key (TooLargeKey) of a request whose reply
	// exceeds it, and a reply to a request of the tracker's own that
	// exceeds it fails that request with ErrReplyTooLarge.
	MaxReply int
	TooLarge func(key string)
	// Guards resolves the checks of guarded transactions as they are
	// written; nil: none.
	Guards *Guards
	// OnRestored is told when a connection is restored: every watch
	// pending on the handle was registered again (ExpectWatches). It is
	// called from go-zookeeper's goroutines and must not block.
	OnRestored func()
	// OnNotification is told every watch notification read, before
	// go-zookeeper reads it: its type, state and server path. It is
	// called on go-zookeeper's receive goroutine and must not block.
	OnNotification func(typ zk.EventType, state zk.State, path string)
	// Clock is the monotonic clock of the silence (Silence); nil: the
	// time since New.
	Clock func() time.Duration
}

// New returns the tracker of a new go-zookeeper handle: give its Dialer
// to the handle, and Close it once the handle is closed.
func New(cfg Config) *Tracker {
	t := newTracker()
	t.notifications, t.replies = cfg.Notifications, cfg.Replies
	t.handshake = cfg.Handshake
	t.maxReply, t.tooLarge = cfg.MaxReply, cfg.TooLarge
	t.guards = cfg.Guards
	t.onRestored = cfg.OnRestored
	t.onNotification = cfg.OnNotification
	if cfg.Clock != nil {
		t.mono = cfg.Clock
	}
	return t
}

func newTracker() *Tracker {
	base := time.Now() // carries a monotonic reading: steps of the wall clock do not move it
	return &Tracker{mono: func() time.Duration { return time.Since(base) }}
}

// heard returns lastHeard on the mono clock, and false before any answer.
func (t *Tracker) heard() (time.Duration, bool) {
	ns := t.lastHeard.Load()
	return time.Duration(ns - 1), ns != 0
}

// Silence returns how long ago, on the monotonic clock, the server
// certainly last heard from this handle: the send time of the newest
// answered request. Before any answer it is 0.
func (t *Tracker) Silence() time.Duration {
	h, ok := t.heard()
	if !ok {
		return 0
	}
	return t.mono() - h
}

// errSpent refuses a handshake or dial on a handle whose session ended.
var errSpent = errors.New("connection: handle's session ended; a new handle opens the next session")

// errClosed refuses a dial on a handle the client closed (Close).
var errClosed = errors.New("connection: client closed")

// Closed reports whether Close was called: the handle ended, and a
// request of the tracker's own that fails now fails for that.
func (t *Tracker) Closed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Retire marks the handle spent: it will not connect again.
func (t *Tracker) Retire() { t.spent.Store(true) }

// SessionID returns the session ID of the newest handshake's answer: 0
// before one, and after an answer that says the session expired.
func (t *Tracker) SessionID() int64 { return t.sessionID.Load() }

// SeenZxid returns the newest zxid of a reply heard on the handle.
func (t *Tracker) SeenZxid() int64 { return t.seenZxid.Load() }

// Timeout returns the session timeout the newest handshake's answer
// negotiated.
func (t *Tracker) Timeout() time.Duration {
	return time.Duration(t.timeoutMS.Load()) * time.Millisecond
}

// Dialer wraps go-zookeeper's dialer so that every connection is tracked.
func (t *Tracker) Dialer(dial func(network, addr string, timeout time.Duration) (net.Conn, error)) func(string, string, time.Duration) (net.Conn, error) {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		if t.spent.Load() {
			return nil, errSpent
		}
		c, err := dial(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, t: t}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.closed {
			c.Close()
			return nil, errClosed
		}
		if t.conns == nil {
			t.conns = map[*trackedConn]struct{}{}
		}
		t.conns[tc] = struct{}{}
		return tc, nil
	}
}

// trackedConn frames what go-zookeeper writes and reads on one TCP
// connection. The first frame each way is the handshake.
type trackedConn struct {
	net.Conn
	t *Tracker

	// wmu orders whole frames on the wire: go-zookeeper's (one Write a
	// request) and the tracker's own (inject.go), each with its entry in
	// sent, in the order of the bytes.
	wmu sync.Mutex

	mu      sync.Mutex
	sent    []sentReq // requests not yet answered, oldest first
	out     framer
	in      framer
	create2 map[int32]bool // xids of creates sent as create2
	rd      reader         // what Read holds of the stream (inject.go)
	dead    bool           // the connection failed: no injected request is sent on it

	conn       int                  // the tracker's number of this connection, once its handshake is answered
	setWatches map[int32][]WatchKey // setWatches sent and not answered, by xid
	frameZxid  int64                // the zxid of the reply being handed on, hidden from go-zookeeper (hideZxid); only Read's goroutine

	// Injected requests wait for go-zookeeper's credentials (inject.go).
	open             bool       // injected requests may be written
	authOK, authWant int        // auth requests answered OK on this connection; the tracker's creds at its handshake
	queue            []queued   // injected requests not yet written, oldest first
	flushing         bool       // a goroutine writes queue
	dl               sync.Mutex // orders the write deadlines of go-zookeeper's writes and the tracker's
	zkDeadline       time.Time  // go-zookeeper's write deadline
	ownDeadline      time.Time  // the tracker's, while it writes

	// The read deadline while the handshake is unanswered (handshake.go).
	rdl               sync.Mutex
	zkReadDeadline    time.Time // go-zookeeper's
	handshakeDeadline time.Time // the tracker's bound on the answer; zero once answered
}

// ZooKeeper opcodes the tracker reads.
const (
	opCreate       = 1
	opExists       = 3
	opGetData      = 4
	opGetChildren  = 8
	opGetChildren2 = 12
	opCreate2      = 15
	opSetAuth      = 100
)

// sentReq is a request written and not yet answered.
type sentReq struct {
	at   int64     // send time, mono() nanoseconds + 1
	key  string    // its requestKey, with a maxReply
	inj  *injected // the tracker's own request (inject.go); nil for go-zookeeper's
	xid  int32     // its xid (the handshake has none)
	auth bool      // an auth request: the server answers it at once
}

func (c *trackedConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	now := int64(c.t.mono()) + 1
	c.mu.Lock()
	if c.out.atBoundary() && c.out.frames == 0 {
		if !c.t.mayConnect(b) {
			c.mu.Unlock()
			c.Conn.Close()
			return 0, errSpent
		}
		c.t.raiseLastZxid(b)
		c.handshakeWritten()
	}
	handshaken := c.out.frames > 0
	var xid int32
	auth := false
	var written func() // a WhenWritten function told of this create
	if c.out.atBoundary() && handshaken && len(b) >= 12 {
		written = c.noteCreate(b)
		c.rewriteGuards(b)
		c.noteSetWatches(b)
		xid = int32(binary.BigEndian.Uint32(b[4:8]))
		auth = int32(binary.BigEndian.Uint32(b[8:12])) == opSetAuth
		if !auth && !c.open {
			// go-zookeeper's send loop runs: its credentials were
			// answered (it sends them before anything else).
			c.openLocked()
		}
	}
	key := ""
	if c.t.maxReply > 0 && c.out.atBoundary() && handshaken {
		key = requestKey(b)
	}
	c.out.feed(b, func([]byte) {
		c.sent = append(c.sent, sentReq{at: now, key: key, xid: xid, auth: auth})
		key = ""
	})
	c.mu.Unlock()
	if written != nil {
		// Before the bytes go: a request it sends is queued behind them
		// (the writer of those waits for wmu).
		written()
	}
	n, err := c.Conn.Write(b)
	if err != nil && handshaken {
		c.failInjected()
		// go-zookeeper answers a request whose write failed at once, and
		// again when it flushes the connection's pending requests; a
		// request queued while the handle was closing has had a third
		// answer, and its two-slot channel then blocks go-zookeeper's loop
		// forever. Closing the connection and reporting the write done
		// leaves a single answer, the flush's, which comes as soon as the
		// read side sees the close.
		c.Conn.Close()
		return len(b), nil
	}
	return n, err
}

// mayConnect reports whether the connect request at the start of b may be
// sent: [len][protocolVersion int32][lastZxidSeen int64][timeOut int32]
// [sessionID int64]... A handle that had a session may only resume it.
func (t *Tracker) mayConnect(b []byte) bool {
	if t.spent.Load() {
		return false
	}
	first := t.first.Load()
	if first == 0 {
		return true
	}
	const at = 4 + 4 + 8 + 4
	return len(b) >= at+8 && int64(binary.BigEndian.Uint64(b[at:at+8])) == first
}

// requestKey names a whole request at the start of b for tooLarge: its
// kind, as the client's operations name it, and its path, so that two
// reads of one path in flight at once (a node's data and its children)
// are told apart. It is "" for a request without a path.
func requestKey(b []byte) string {
	p := requestPath(b)
	if p == "" {
		return ""
	}
	switch op := int32(binary.BigEndian.Uint32(b[8:12])); op {
	case opExists:
		return TooLargeKey("exists", p)
	case opGetData:
		return TooLargeKey("get", p)
	case opGetChildren, opGetChildren2:
		return TooLargeKey("children", p)
	default:
		return TooLargeKey("opcode "+strconv.Itoa(int(op)), p)
	}
}

// TooLargeKey is the key of a request in Config.TooLarge: what the operation is
// called (the client's name for it, "get", "children") and the server
// path.
func TooLargeKey(what, serverPath string) string { return what + " " + serverPath }

// requestPath reads the path of a whole request at the start of b:
// [len][xid][opcode][path]... — the layout of every request with a path.
// A request without one (a ping) gives a string that names no node.
func requestPath(b []byte) string {
	if len(b) < 16 {
		return ""
	}
	n := int(int32(binary.BigEndian.Uint32(b[12:16])))
	if n <= 0 || 16+n > len(b) || b[16] != '/' {
		return ""
	}
	return string(b[16 : 16+n])
}

// overLong is told of a reply longer than maxReply, before its xid is
// read: it answers the oldest request not yet answered but auth requests
// (replies come in order but for those, which are small; so are
// notifications). c.mu is held.
func (c *trackedConn) overLong() {
	if c.in.frames == 0 || c.t.tooLarge == nil {
		return
	}
	for _, s := range c.sent {
		if !s.auth {
			if s.key != "" {
				c.t.tooLarge(s.key)
			}
			return
		}
	}
}

// reply handles the head of one frame from the server; c.mu is held.
func (c *trackedConn) reply(head []byte) {
	if c.in.frames == 1 {
		c.handshakeAnswered()
		// Connect response: protocolVersion int32, timeOut int32,
		// sessionID int64, ...
		if len(head) >= 16 {
			id := int64(binary.BigEndian.Uint64(head[8:16]))
			c.t.sessionID.Store(id)
			if id == 0 || !c.t.first.CompareAndSwap(0, id) && c.t.first.Load() != id {
				// The server says the session expired: the handle is done.
				c.t.spent.Store(true)
				return
			}
			c.t.timeoutMS.Store(int64(int32(binary.BigEndian.Uint32(head[4:8]))))
			c.t.mu.Lock()
			c.t.newConnectionLocked()
			c.conn = c.t.restore.conn
			c.t.cur = c
			c.authWant = c.t.creds
			c.t.mu.Unlock()
			if c.authWant == 0 {
				c.openLocked()
			}
		}
	} else if len(head) >= 4 {
		xid := int32(binary.BigEndian.Uint32(head[0:4]))
		if xid == -1 {
			count(c.t.notifications)
			return // a watch notification answers no request
		}
		c.answeredHead(xid, head)
		if c.create2[xid] {
			delete(c.create2, xid)
			// Reply header: xid, zxid (int64), err (int32); then the body.
			if len(head) >= 16 && binary.BigEndian.Uint32(head[12:16]) == 0 {
				c.create2Reply(head[16:])
			}
		}
		if s, _ := c.takeSent(xid, false); s.auth && len(head) >= 16 && binary.BigEndian.Uint32(head[12:16]) == 0 {
			c.authOK++
			c.t.mu.Lock()
			c.t.creds = max(c.t.creds, c.authOK)
			c.t.mu.Unlock()
			if c.authOK >= c.authWant {
				c.openLocked()
			}
		}
		return
	}
	c.takeSent(0, false)
}

// answeredHead records what the header of a reply to request xid says:
// a setWatches answered, the zxid. c.mu is held.
func (c *trackedConn) answeredHead(xid int32, head []byte) {
	if keys, ok := c.setWatches[xid]; ok {
		delete(c.setWatches, xid)
		c.t.setWatchesAnswered(c.conn, keys)
	}
	if len(head) >= 12 {
		zxid := int64(binary.BigEndian.Uint64(head[4:12]))
		if zxid == 0 {
			zxid = c.frameZxid // hidden from go-zookeeper (hideZxid)
		}
		c.t.replyZxid(c.conn, zxid)
	}
}

// takeSent counts a reply and takes the request it answers off sent,
// moving lastHeard to that request's send time: the oldest with its xid
// (the handshake's reply, c.in.frames 1, answers the first request), or
// with none, the oldest of go-zookeeper's requests, unless injected: an
// injected request is only answered by its own reply. ok is false if no
// request was taken. c.mu is held.
func (c *trackedConn) takeSent(xid int32, injected bool) (s sentReq, ok bool) {
	count(c.t.replies)
	i := -1
	if c.in.frames == 1 && !injected {
		if len(c.sent) > 0 {
			i = 0
		}
	} else {
		for j := range c.sent {
			if c.sent[j].xid == xid && (c.sent[j].inj != nil) == injected {
				i = j
				break
			}
		}
		if i < 0 && !injected {
			for j := range c.sent {
				if c.sent[j].inj == nil {
					i = j
					break
				}
			}
		}
	}
	if i < 0 {
		return sentReq{}, false
	}
	s = c.sent[i]
	if i == 0 {
		c.sent[0] = sentReq{}
		c.sent = c.sent[1:]
	} else {
		c.sent = append(c.sent[:i], c.sent[i+1:]...)
		c.sent[len(c.sent):cap(c.sent)][0] = sentReq{}
	}
	sent := s.at
	for {
		old := c.t.lastHeard.Load()
		if sent <= old || c.t.lastHeard.CompareAndSwap(old, sent) {
			break
		}
	}
	return s, true
}
