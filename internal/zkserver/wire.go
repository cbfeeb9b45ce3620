package zkserver

import (
	"encoding/binary"
	"sync/atomic"
	"time"
)

// Wire is what a counting proxy saw of the ZooKeeper client protocol on
// all its connections: frames after each connection's handshake, by kind.
type Wire struct {
	// Requests are the frames clients sent, pings, watch restores
	// (setWatches) and authentication left out.
	Requests int64
	// Replies are the answers to those requests.
	Replies int64
	// Notifications are the watch events servers sent.
	Notifications int64
	// Pings are the pings clients sent.
	Pings int64
	// Bursts are the requests a client sent while it had no other request
	// of its connection unanswered (replies counted when delivered to it):
	// the round trips a client waited for, one after another. Requests
	// sent back to back, or while one is in flight, share one.
	Bursts int64
}

// Sub returns w less o, field by field.
func (w Wire) Sub(o Wire) Wire {
	return Wire{w.Requests - o.Requests, w.Replies - o.Replies, w.Notifications - o.Notifications, w.Pings - o.Pings, w.Bursts - o.Bursts}
}

// WireEvent is one frame of the client protocol, as a counting proxy read
// it (before any delay).
type WireEvent struct {
	At       time.Time
	Conn     int64 // the proxy's number of the connection, from 1
	ToServer bool
	Xid      int32
	Op       int32 // a request's opcode
	Err      int32 // a reply's error code
}

// wireStats counts a proxy's frames.
type wireStats struct {
	requests, replies, notifications, pings, bursts atomic.Int64
	conns                                           atomic.Int64
	log                                             atomic.Pointer[func(WireEvent)]
}

// NewCountingProxy is NewProxy that also reads the ZooKeeper client
// protocol's frames on its connections and counts them (ProxyWire).
func NewCountingProxy(targets []string) (*Proxy, error) {
	return newProxy(nil, targets, &wireStats{})
}

// ProxyWire returns what counting proxy p has counted so far (zero for a
// proxy that does not count).
func ProxyWire(p *Proxy) Wire {
	s := p.wire
	if s == nil {
		return Wire{}
	}
	return Wire{s.requests.Load(), s.replies.Load(), s.notifications.Load(), s.pings.Load(), s.bursts.Load()}
}

// LogWire has counting proxy p call f with every frame it reads from now
// on (nil stops it). f runs on the proxy's reading goroutines: it must be
// quick.
func LogWire(p *Proxy, f func(WireEvent)) {
	if p.wire == nil {
		return
	}
	if f == nil {
		p.wire.log.Store(nil)
		return
	}
	p.wire.log.Store(&f)
}

// linkWire frames one connection, each way.
type linkWire struct {
	stats       *wireStats
	conn        int64
	up, down    heads
	outstanding atomic.Int64 // requests sent, replies not yet delivered
}

// Special xids of the client protocol.
const (
	xidNotification = -1
	xidPing         = -2
	xidAuth         = -4
	xidSetWatches   = -8
)

// feed reads b, the next bytes one way, and returns how many replies end
// in it (toClient).
func (w *linkWire) feed(b []byte, toClient bool, at time.Time) int {
	if w.conn == 0 && !toClient {
		w.conn = w.stats.conns.Add(1)
	}
	replies := 0
	log := w.stats.log.Load()
	if !toClient {
		w.up.feed(b, func(head []byte, first bool) {
			if first || len(head) < 8 {
				return // the handshake
			}
			xid := int32(binary.BigEndian.Uint32(head[0:4]))
			switch xid {
			case xidPing:
				w.stats.pings.Add(1)
			case xidAuth, xidSetWatches:
			default:
				w.stats.requests.Add(1)
				if w.outstanding.Add(1) == 1 {
					w.stats.bursts.Add(1)
				}
			}
			if log != nil {
				(*log)(WireEvent{At: at, Conn: w.conn, ToServer: true, Xid: xid, Op: int32(binary.BigEndian.Uint32(head[4:8]))})
			}
		})
		return 0
	}
	w.down.feed(b, func(head []byte, first bool) {
		if first || len(head) < 4 {
			return
		}
		xid := int32(binary.BigEndian.Uint32(head[0:4]))
		switch xid {
		case xidNotification:
			w.stats.notifications.Add(1)
		case xidPing, xidAuth, xidSetWatches:
		default:
			w.stats.replies.Add(1)
			replies++
		}
		if log != nil {
			ev := WireEvent{At: at, Conn: w.conn, Xid: xid}
			if len(head) >= 16 {
				ev.Err = int32(binary.BigEndian.Uint32(head[12:16]))
			}
			(*log)(ev)
		}
	})
	return replies
}

// delivered notes that n replies reached the client.
func (w *linkWire) delivered(n int) { w.outstanding.Add(-int64(n)) }

// heads splits a stream of length-prefixed frames and hands each frame's
// first 16 bytes (fewer if shorter) to a callback once the frame is whole.
type heads struct {
	lenBuf [4]byte
	lenN   int
	remain int
	head   []byte
	frames int
}

func (h *heads) feed(b []byte, done func(head []byte, first bool)) {
	for len(b) > 0 {
		if h.remain == 0 {
			k := copy(h.lenBuf[h.lenN:], b)
			h.lenN += k
			b = b[k:]
			if h.lenN < 4 {
				return
			}
			h.lenN = 0
			h.remain = int(int32(binary.BigEndian.Uint32(h.lenBuf[:])))
			h.head = h.head[:0]
			if h.remain <= 0 {
				h.remain = 0
				h.frames++
				done(nil, h.frames == 1)
			}
			continue
		}
		k := min(h.remain, len(b))
		if n := min(16-len(h.head), k); n > 0 {
			h.head = append(h.head, b[:n]...)
		}
		h.remain -= k
		b = b[k:]
		if h.remain == 0 {
			h.frames++
			done(h.head, h.frames == 1)
		}
	}
}

// lateness is a histogram of how late delayed chunks were written, in
// microseconds (the last bucket: 2 ms or more).
type lateness struct {
	buckets [2001]atomic.Int64
}

func (l *lateness) note(d time.Duration) {
	us := max(0, min(int(d/time.Microsecond), len(l.buckets)-1))
	l.buckets[us].Add(1)
}

// Lateness says how much later than due a proxy wrote its delayed chunks:
// the added delay's error.
type Lateness struct {
	Chunks   int64
	P50, P99 time.Duration
	Max      time.Duration // 2 ms means 2 ms or more
}

// ProxyLateness returns how late p's delayed chunks were written since the
// last call with reset (or since p started), and with reset starts again.
func ProxyLateness(p *Proxy, reset bool) Lateness {
	var counts [len(p.late.buckets)]int64
	var total int64
	for i := range p.late.buckets {
		if reset {
			counts[i] = p.late.buckets[i].Swap(0)
		} else {
			counts[i] = p.late.buckets[i].Load()
		}
		total += counts[i]
	}
	out := Lateness{Chunks: total}
	var seen int64
	for i, n := range counts {
		if n == 0 {
			continue
		}
		if seen < (total+1)/2 && seen+n >= (total+1)/2 {
			out.P50 = time.Duration(i) * time.Microsecond
		}
		q99 := total - total/100
		if seen < q99 && seen+n >= q99 {
			out.P99 = time.Duration(i) * time.Microsecond
		}
		seen += n
		out.Max = time.Duration(i) * time.Microsecond
	}
	return out
}
