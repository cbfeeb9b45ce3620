package connection_test

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// A new session after the first is checked before it is reported: a sync,
// the client's own request (history.go). Whatever happens to that sync —
// its connection dropped once it is sent, its answer lost on a connection
// that stays up, its answer late — the session is reported, in the right
// history, within a few session timeouts; and it is not reported before
// the check is answered.

const (
	opSyncWire      = 9
	injectedXidBase = -(1 << 20) // the client's own requests' xids are at or below it
)

// syncFault acts on the client's own syncs (the history checks) as they
// cross the client's connections: the next n of them are hit.
type syncFault struct {
	mu      sync.Mutex
	mode    string // "drop": the connection is closed once the sync is written; "swallow": its answer never comes, the connection stays up
	n       int
	hits    int
	written int // history checks written
}

func (f *syncFault) take() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written++
	if f.n > 0 {
		f.n--
		f.hits++
		return true
	}
	return false
}

func (f *syncFault) arm(mode string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.n = mode, n
}

func (f *syncFault) counts() (hits, written int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits, f.written
}

func (f *syncFault) dialer() func(network, addr string, timeout time.Duration) (net.Conn, error) {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &faultConn{Conn: c, f: f, swallow: map[int32]bool{}}, nil
	}
}

// faultConn reads the frames the client writes and the server answers.
type faultConn struct {
	net.Conn
	f *syncFault

	wmu     sync.Mutex
	wbuf    []byte
	wframes int

	mu      sync.Mutex
	swallow map[int32]bool

	rbuf    []byte // read, not yet a whole frame
	out     []byte // whole frames to hand on
	rframes int
}

func (c *faultConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	c.wbuf = append(c.wbuf, b...)
	drop := false
	for len(c.wbuf) >= 4 {
		l := int(binary.BigEndian.Uint32(c.wbuf))
		if len(c.wbuf) < 4+l {
			break
		}
		frame := c.wbuf[4 : 4+l]
		c.wbuf = c.wbuf[4+l:]
		c.wframes++
		if c.wframes == 1 || len(frame) < 8 {
			continue // the handshake
		}
		xid := int32(binary.BigEndian.Uint32(frame[0:4]))
		op := int32(binary.BigEndian.Uint32(frame[4:8]))
		if op == opSyncWire && xid <= injectedXidBase && c.f.take() {
			c.f.mu.Lock()
			mode := c.f.mode
			c.f.mu.Unlock()
			switch mode {
			case "drop":
				drop = true
			case "swallow":
				c.mu.Lock()
				c.swallow[xid] = true
				c.mu.Unlock()
			}
		}
	}
	c.wmu.Unlock()
	n, err := c.Conn.Write(b)
	if drop {
		c.Conn.Close()
	}
	return n, err
}

func (c *faultConn) Read(p []byte) (int, error) {
	for {
		c.mu.Lock()
		if len(c.out) > 0 {
			n := copy(p, c.out)
			c.out = c.out[n:]
			c.mu.Unlock()
			return n, nil
		}
		c.mu.Unlock()
		buf := make([]byte, 32<<10)
		n, err := c.Conn.Read(buf)
		c.mu.Lock()
		c.rbuf = append(c.rbuf, buf[:n]...)
		for len(c.rbuf) >= 4 {
			l := int(binary.BigEndian.Uint32(c.rbuf))
			if len(c.rbuf) < 4+l {
				break
			}
			frame := c.rbuf[:4+l]
			c.rbuf = c.rbuf[4+l:]
			c.rframes++
			if c.rframes > 1 && l >= 4 && c.swallow[int32(binary.BigEndian.Uint32(frame[4:8]))] {
				continue // the history check's answer: never delivered
			}
			c.out = append(c.out, frame...)
		}
		c.mu.Unlock()
		if err != nil {
			c.mu.Lock()
			pending := len(c.out)
			c.mu.Unlock()
			if pending == 0 {
				return 0, err
			}
		}
	}
}

// reportedWithin waits for states to say Lost then Reconnected within d,
// and returns the session then.
func reportedWithin(t *testing.T, c *connection.Client, states <-chan connection.State, d time.Duration) *connection.Session {
	t.Helper()
	deadline := time.After(d)
	lost := false
	for {
		select {
		case s := <-states:
			lost = lost || s == connection.Lost
			if lost && s == connection.Reconnected {
				return c.Session()
			}
		case <-deadline:
			t.Fatalf("no new session reported within %v of the old one's end (lost %v)", d, lost)
		}
	}
}

// TestHistoryCheckSentAgainAfterItsConnectionDrops: a new session's
// history check whose connection drops as it is written is sent again on
// the next connection, three times in a row, before the session is
// reported. The session timeout leaves room for three reconnects: a
// session whose checks went unanswered for that long is reported without
// one (retryHistoryLocked), which a loaded machine reached after one drop
// with a 2 s timeout.
func TestHistoryCheckSentAgainAfterItsConnectionDrops(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	f := &syncFault{}
	c := open(t, p.Servers(), connection.WithSessionTimeout(8*time.Second), connection.WithDialer(f.dialer()))
	write(t, c, root, 3)
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	before := c.Session()
	f.arm("drop", 3)
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	after := reportedWithin(t, c, states, 30*time.Second)
	hits, written := f.counts()
	t.Logf("history checks written %d, connections dropped under them %d", written, hits)
	if hits < 3 {
		t.Fatalf("only %d history checks were hit (of %d written); the test wants 3", hits, written)
	}
	if after.ID() == before.ID() || after.History() != 0 {
		t.Fatalf("after the expiry: session %#x history %d; want a new session in history 0", after.ID(), after.History())
	}
	if _, err := c.Create(ctx, root+"/after", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
}

func TestHistoryCheckAnswerLostOnALiveConnection(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	f := &syncFault{}
	const timeout = 2 * time.Second
	c := open(t, p.Servers(), connection.WithSessionTimeout(timeout), connection.WithDialer(f.dialer()))
	write(t, c, root, 3)
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	f.arm("swallow", 1)
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	// The server answered the check; the answer never came, and the
	// connection lives on (pings answered). Every other request of the
	// client is answered: a client that waits for that one answer for
	// ever never reports its session, and WaitSession never returns.
	after := reportedWithin(t, c, states, 5*timeout)
	if after.History() != 0 {
		t.Fatalf("history %d; want 0", after.History())
	}
}

func TestHistoryCheckSlowAnswerAtNewSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	const timeout = 2 * time.Second
	c := open(t, p.Servers(), connection.WithSessionTimeout(timeout))
	write(t, c, root, 3)
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	before := c.Session()
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	// Replies late from the new session's start: its handshake and its
	// check answered 600 ms after they were sent, for 3 s.
	p.DelayReplies(600 * time.Millisecond)
	time.AfterFunc(3*time.Second, func() { p.DelayReplies(0) })
	after := reportedWithin(t, c, states, 15*time.Second)
	if after.ID() == before.ID() || after.History() != 0 {
		t.Fatalf("session %#x history %d; want a new session in history 0", after.ID(), after.History())
	}
	if _, err := c.Create(ctx, root+"/after", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryCheckDroppedAfterWipeFindsNewHistory: the database wiped, and
// the first checks of the new session lost with their connections: the
// session is reported once a check is answered, in history 1.
func TestHistoryCheckDroppedAfterWipeFindsNewHistory(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	f := &syncFault{}
	c := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second), connection.WithDialer(f.dialer()))
	write(t, c, "", 20)
	f.arm("drop", 2)
	_, after := replaced(t, ens, c, ens.WipeDatabase)
	hits, written := f.counts()
	t.Logf("history checks written %d, connections dropped under them %d", written, hits)
	if after.History() != 1 {
		t.Fatalf("history after the wipe: %d; want 1", after.History())
	}
	if hits < 2 {
		t.Fatalf("only %d history checks were hit; the test wants 2", hits)
	}

}
