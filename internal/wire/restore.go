package wire

import (
	"encoding/binary"
	"math"
	"time"
)

// Watches after a reconnect. When go-zookeeper connects again within its
// session, it sends the server every watch it still holds (setWatches,
// with the last zxid it saw), and the server fires at once those of nodes
// that changed meanwhile — before it answers the setWatches. go-zookeeper
// sends them from a goroutine of its own, after the session is back, so a
// request sent as soon as Reconnected is reported could reach the server
// first, and a recipe that takes its answer for "I have heard of every
// change until now" would be wrong about the changes made while it was cut
// off.
//
// The tracker closes that gap. When a connection's handshake resumes the
// session, the client gives it the shared watches pending on the handle
// (those go-zookeeper holds and will send); the tracker reads the
// setWatches frames go-zookeeper writes, and once the answers to the
// frames that name every one of them have been read, the connection is
// restored. go-zookeeper reads a connection's frames one at a time and runs
// the client's callback for each notification before it reads the next,
// so by then every notification the server sent ahead of those answers
// has fired its Watch. The client reports Reconnected only then.
//
// Two more things make that true when connections fail during the
// re-registration:
//
//   - The zxid a setWatches carries. go-zookeeper sends its last zxid seen,
//     and the server fires a watch only for a change after it. A
//     connection that drops before its setWatches are all answered may
//     still have moved that zxid on (the answer to a first frame, a read),
//     past changes whose watches were never registered on it: the next
//     connection's setWatches would tell the server those changes were
//     seen, and they would never fire. The tracker knows the last zxid
//     heard while every watch was registered (goodZxid: replies of a
//     restored connection) and writes no newer one into a setWatches. The
//     server may then fire a watch for a change its read already saw: an
//     extra event, never a missed one.
//   - The safety net. A client whose own bookkeeping expected a watch
//     go-zookeeper does not send again would never be restored; after
//     patience it is taken as restored anyway — but only while no
//     setWatches frame is in flight and none was written or answered for
//     that long, so a slow link that is still re-registering is waited for.

// opSetWatches is ZooKeeper's setWatches request, which go-zookeeper
// v1.0.4 sends after a reconnect.
const opSetWatches = 101

// WatchKind is what a watch waits for, as go-zookeeper files it.
type WatchKind uint8

// The kinds of watch.
const (
	DataWatch  WatchKind = iota // a read of the data: the node's data changes or it goes
	ChildWatch                  // a listing: a child comes or goes, or the node goes
	ExistWatch                  // an exists: the node comes, or changes or goes
)

// WatchKey is a watch the tracker waits to see sent again after a
// reconnect: a server path and the kind of list it appears in (a
// setWatches has a data, an exist and a child list; an exists watch on a
// node that exists is in the data list).
type WatchKey struct {
	Path string
	Kind WatchKind
}

// restoreState is the tracker's view of one connection's setWatches.
type restoreState struct {
	conn     int                   // handshakes answered on the handle
	at       time.Duration         // mono time of the handshake, or of the last setWatches written or answered
	expect   map[WatchKey]struct{} // watches not yet seen answered; nil until given
	inFlight int                   // setWatches frames written and not answered
	restored bool
}

// newConnection starts the restore state of a connection whose handshake
// was just answered; t.mu is held.
func (t *Tracker) newConnectionLocked() {
	t.restore = restoreState{conn: t.restore.conn + 1, at: t.mono()}
}

// ExpectWatches gives the current connection the watches it must see sent
// again before it is restored. It is called when the handshake is
// answered, before go-zookeeper sends any of them.
func (t *Tracker) ExpectWatches(keys map[WatchKey]struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.restore.expect != nil || t.restore.restored {
		return
	}
	t.restore.expect = keys
	if keys == nil {
		t.restore.expect = map[WatchKey]struct{}{}
	}
	t.checkRestoredLocked()
}

// Restored reports whether the current connection is restored, and
// whether only by the safety net: no setWatches in flight, and none
// written or answered since the handshake for longer than patience.
func (t *Tracker) Restored(patience time.Duration) (ok, byNet bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.restore.restored {
		return true, false
	}
	if t.restore.inFlight == 0 && t.mono()-t.restore.at > patience {
		return true, true
	}
	return false, false
}

// restoredNow reports whether connection conn is the current one and is
// restored — proven, not by the safety net: every notification of a
// change made while the client was cut off has been handled.
func (t *Tracker) restoredNow(conn int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return conn == t.restore.conn && t.restore.restored
}

// setWatchesWritten records a setWatches frame written on connection conn
// and returns the zxid to write into it, given the frame's own relative:
// no newer than goodZxid. A frame of go-zookeeper's carries 0 (it never
// sees a reply's zxid: hideZxid), and a re-registration of the client's
// own watches math.MaxInt64 (ReRegister): they get the zxid of the last
// reply read — go-zookeeper's own rule, and not the newest zxid heard:
// after a reply of a server ahead (a ping's zxid is its last applied one),
// a watch may have been set on a server behind, at an older zxid, and a
// change between the two would never fire.
func (t *Tracker) setWatchesWritten(conn int, relative int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if conn == t.restore.conn {
		t.restore.inFlight++
		t.restore.at = t.mono()
	}
	if relative <= 0 || relative == math.MaxInt64 {
		relative = t.lastReply.Load()
	}
	return min(relative, t.goodZxid)
}

// replyZxid records the zxid of a reply to a request on connection conn:
// the newest heard while every watch was registered, if conn is restored.
func (t *Tracker) replyZxid(conn int, zxid int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if conn == t.restore.conn && t.restore.restored && zxid > t.goodZxid {
		t.goodZxid = zxid
	}
}

// setWatchesAnswered records that the server answered a setWatches frame
// naming keys.
func (t *Tracker) setWatchesAnswered(conn int, keys []WatchKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if conn != t.restore.conn {
		return
	}
	t.restore.inFlight--
	t.restore.at = t.mono()
	if t.restore.expect == nil {
		// Not expected yet: it cannot have been written before the
		// expectation was given; keep nothing.
		return
	}
	for _, k := range keys {
		delete(t.restore.expect, k)
		if k.Kind == DataWatch {
			// go-zookeeper files an exists watch on a node that exists
			// as a data watch.
			delete(t.restore.expect, WatchKey{k.Path, ExistWatch})
		}
	}
	t.checkRestoredLocked()
}

func (t *Tracker) checkRestoredLocked() {
	if !t.restore.restored && t.restore.expect != nil && len(t.restore.expect) == 0 {
		t.restore.restored = true
		if t.onRestored != nil {
			t.onRestored()
		}
	}
}

// noteSetWatches records a setWatches request about to be written whole
// from b, and writes into it the zxid setWatchesWritten gives; any other
// request is left alone.
func (c *trackedConn) noteSetWatches(b []byte) {
	keys, ok := parseSetWatches(b)
	if !ok {
		return
	}
	if c.setWatches == nil {
		c.setWatches = map[int32][]WatchKey{}
	}
	c.setWatches[int32(binary.BigEndian.Uint32(b[4:8]))] = keys
	rel := int64(binary.BigEndian.Uint64(b[12:20]))
	binary.BigEndian.PutUint64(b[12:20], uint64(c.t.setWatchesWritten(c.conn, rel)))
}

// parseSetWatches reads the watches named by a whole setWatches request
// at the start of b: [len][xid][opcode][relativeZxid int64], then the
// data, exist and child lists, each an int32 count of strings (int32
// length, bytes). It returns false if b is not one.
func parseSetWatches(b []byte) ([]WatchKey, bool) {
	if len(b) < 12 || int32(binary.BigEndian.Uint32(b[8:12])) != opSetWatches {
		return nil, false
	}
	end := 4 + int(binary.BigEndian.Uint32(b[0:4]))
	if end > len(b) || end < 20 {
		return nil, false
	}
	p := b[20:end]
	var keys []WatchKey
	for _, kind := range []WatchKind{DataWatch, ExistWatch, ChildWatch} {
		if len(p) < 4 {
			return nil, false
		}
		n := int(int32(binary.BigEndian.Uint32(p)))
		p = p[4:]
		if n < 0 || n > len(p)/4 {
			return nil, false
		}
		for range n {
			if len(p) < 4 {
				return nil, false
			}
			l := int(int32(binary.BigEndian.Uint32(p)))
			if l < 0 || 4+l > len(p) {
				return nil, false
			}
			keys = append(keys, WatchKey{string(p[4 : 4+l]), kind})
			p = p[4+l:]
		}
	}
	return keys, true
}

// ReRegister sends the own watches of the handle again on the connection
// whose handshake was just answered, as go-zookeeper does its own: the
// zxid written is the tracker's goodZxid (noteSetWatches), and the
// connection is restored once they are answered too. It is
// called from the handshake's callback, before go-zookeeper's loops run:
// it only queues the frames (inject.go), which the connection's writer
// writes once go-zookeeper's credentials are answered on it.
func (t *Tracker) ReRegister(data, child []string) {
	send := func(d, ch []string) {
		b := EncodeSetWatches(math.MaxInt64, d, nil, ch)
		_ = t.inject(t.first.Load(), b, &injected{done: func(int64, int32, []byte, error) {}})
	}
	var d, ch []string
	size := 0
	for _, p := range data {
		d = append(d, p)
		if size += 4 + len(p); size > MaxRequest {
			send(d, ch)
			d, ch, size = nil, nil, 0
		}
	}
	for _, p := range child {
		ch = append(ch, p)
		if size += 4 + len(p); size > MaxRequest {
			send(d, ch)
			d, ch, size = nil, nil, 0
		}
	}
	if len(d)+len(ch) > 0 {
		send(d, ch)
	}
}
