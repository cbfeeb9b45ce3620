package zkserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// proxyMode is what a Proxy does with traffic.
type proxyMode int

const (
	modeForward      proxyMode = iota // deliver, after the delay if any
	modeCut                           // close connections, refuse new ones
	modeBlackhole                     // keep connections open, deliver nothing
	modeDropReplies                   // deliver requests, drop the answers
	modeDropRequests                  // drop requests, deliver what servers send
)

// Proxy is a TCP proxy between clients and an ensemble, one loopback
// listener per server. Connect a client to Servers() instead of the
// ensemble's addresses to cut, blackhole or delay its traffic.
//
// A blackhole drops bytes, so a connection that lost bytes is closed on
// Restore (as a real network would reset it), and never delivers a byte
// read after the hole; the client reconnects. The
// server hears nothing from a blackholed client, so a blackhole longer
// than the session timeout expires the session on the server.
type Proxy struct {
	targets   []string
	listeners []net.Listener

	mu         sync.Mutex
	mode       proxyMode
	delay      time.Duration // both directions
	replyDelay time.Duration // added to what servers send
	lastUp     time.Time     // when bytes of a client last reached a server
	lastDown   time.Time     // when the proxy last read bytes of a server (before any delay)
	links      map[*link]struct{}
	done       bool
	greet      []func([]byte) []byte // per listener: rewrites a connection's greeting; nil for none

	session proxiedSession // the last session granted through the proxy (ExpireSession)

	wire *wireStats // NewCountingProxy: the ZooKeeper client protocol's frames, counted
	late lateness   // how late delayed chunks were written

	wg sync.WaitGroup // accept loops and link goroutines
}

// link is one proxied client connection.
type link struct {
	client, server net.Conn
	lost           bool // bytes were dropped by a blackhole; guarded by Proxy.mu
	greet          func([]byte) []byte
	target         int       // the listener's index
	wire           *linkWire // nil unless counting
	handshake      handshakeSniffer
}

// NewProxy starts a proxy in front of targets (host:port). The caller
// must Close it.
func NewProxy(targets []string) (*Proxy, error) { return newProxy(nil, targets, nil) }

// NewProxyOn starts a proxy in front of targets that listens on addrs,
// one address (host:port) per target. An address in use is an error
// matching ErrPortInUse. The caller must Close it.
func NewProxyOn(addrs, targets []string) (*Proxy, error) {
	if len(addrs) != len(targets) {
		return nil, fmt.Errorf("zktest: NewProxyOn: %d addresses for %d targets", len(addrs), len(targets))
	}
	return newProxy(addrs, targets, nil)
}

// newProxy starts a proxy in front of targets, listening on addrs (nil:
// free loopback ports).
func newProxy(addrs, targets []string, wire *wireStats) (*Proxy, error) {
	p := &Proxy{targets: append([]string(nil), targets...), links: map[*link]struct{}{}, wire: wire}
	for i, target := range targets {
		addr := "127.0.0.1:0"
		if addrs != nil {
			addr = addrs[i]
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			p.Close()
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("%w: %s: %v", ErrPortInUse, addr, err)
			}
			return nil, err
		}
		p.listeners = append(p.listeners, l)
		p.wg.Add(1)
		go p.accept(l, i, target)
	}
	return p, nil
}

// Servers returns the proxy's addresses, one per server, in server order.
func (p *Proxy) Servers() []string {
	out := make([]string, len(p.listeners))
	for i, l := range p.listeners {
		out[i] = l.Addr().String()
	}
	return out
}

// Cut closes every proxied connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.mode = modeCut
	links := p.takeLinks(func(*link) bool { return true })
	p.mu.Unlock()
	closeLinks(links)
}

// Blackhole keeps connections open (and accepts new ones) but delivers
// nothing in either direction until Restore.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	p.mode = modeBlackhole
	p.mu.Unlock()
}

// DropReplies delivers what clients send but drops everything the servers
// answer, until Restore: requests take effect and their answers are lost,
// as when a connection breaks after a request was sent. Restore closes the
// connections that lost bytes and those that delivered a request since
// DropReplies, whose answer is lost whenever the server sends it.
func (p *Proxy) DropReplies() {
	p.mu.Lock()
	p.mode = modeDropReplies
	p.mu.Unlock()
}

// DropRequests drops everything clients send but delivers what the
// servers send, until Restore: the server hears nothing (not even pings)
// and expires the session after its timeout, while watch notifications
// still reach the client. Restore closes the connections that lost bytes.
func (p *Proxy) DropRequests() {
	p.mu.Lock()
	p.mode = modeDropRequests
	p.mu.Unlock()
}

// Delay delivers every byte d after it arrived, in both directions, so a
// request and its answer take at least 2d more. Delay(0) removes it.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.mode = modeForward
	p.delay = d
	p.mu.Unlock()
}

// DelayReplies delivers what clients send at once and what servers send d
// later: the server hears the client (its session stays alive), while
// every answer comes late. DelayReplies(0) removes it.
func (p *Proxy) DelayReplies(d time.Duration) {
	p.mu.Lock()
	p.mode = modeForward
	p.replyDelay = d
	p.mu.Unlock()
}

// LastAnswered returns when the proxy last read bytes a server sent (to
// deliver them after the delay, if any, or to drop them). It is the zero
// time before any.
func (p *Proxy) LastAnswered() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastDown
}

// LastHeard returns when bytes of a client last reached a server through
// the proxy (read, plus the delay): what the server last heard of it. It
// is the zero time before any.
func (p *Proxy) LastHeard() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastUp
}

// Restore delivers traffic normally again, without delay, and closes the
// connections that lost bytes to a blackhole.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.mode = modeForward
	p.delay, p.replyDelay = 0, 0
	links := p.takeLinks(func(l *link) bool { return l.lost })
	p.mu.Unlock()
	closeLinks(links)
}

// Close stops the proxy and closes every connection. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.done = true
	links := p.takeLinks(func(*link) bool { return true })
	p.mu.Unlock()
	for _, l := range p.listeners {
		l.Close()
	}
	closeLinks(links)
	p.wg.Wait()
}

// takeLinks removes and returns the links that match; p.mu is held.
func (p *Proxy) takeLinks(match func(*link) bool) []*link {
	var out []*link
	for l := range p.links {
		if match(l) {
			out = append(out, l)
			delete(p.links, l)
		}
	}
	return out
}

func closeLinks(links []*link) {
	for _, l := range links {
		l.client.Close()
		l.server.Close()
	}
}

func (p *Proxy) accept(ln net.Listener, i int, target string) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // listener closed
		}
		p.mu.Lock()
		refuse := p.done || p.mode == modeCut
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		s, err := net.DialTimeout("tcp", target, 5*time.Second)
		if err != nil {
			c.Close() // the server is down: the client sees what it would see
			continue
		}
		l := &link{client: c, server: s, target: i}
		p.mu.Lock()
		if i < len(p.greet) {
			l.greet = p.greet[i]
		}
		p.mu.Unlock()
		if p.wire != nil {
			l.wire = &linkWire{stats: p.wire}
		}
		p.mu.Lock()
		if p.done || p.mode == modeCut {
			p.mu.Unlock()
			closeLinks([]*link{l})
			continue
		}
		p.links[l] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(l, c, s, false)
		go p.pipe(l, s, c, true)
	}
}

// chunk is bytes read at one moment, to be written at due.
type chunk struct {
	data    []byte
	due     time.Time
	delayed bool // due was set with a positive delay
	replies int  // counting: replies to requests that end in data
}

// pipe copies src to dst, dropping bytes in a blackhole and holding them
// back for the delay. Reading and writing are separate goroutines so that a
// delay adds latency without limiting throughput.
func (p *Proxy) pipe(l *link, src, dst net.Conn, toClient bool) {
	defer p.wg.Done()
	queue := make(chan chunk, 256)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		precise := false
		release := func() {}
		defer func() { release() }() // before the goroutine ends (preciseThread)
		var early time.Duration      // how much sooner to wake: the usual lateness of a wake-up
		for c := range queue {
			if c.delayed {
				if !precise {
					// Sub-millisecond delays need a thread of our own:
					// the runtime's timers round them up to a
					// millisecond (preciseThread).
					release = preciseThread()
					precise = true
				}
				sleepUntil(c.due.Add(-early))
				late := time.Since(c.due)
				p.late.note(late)
				// Learn the wake-up's lateness (a thread woken takes
				// microseconds to run), within bounds.
				early = min(max(early+(late/8), 0), 100*time.Microsecond)
			}
			if c.replies > 0 {
				// Before the write: once written, the client may answer
				// before this goroutine runs again.
				l.wire.delivered(c.replies)
			}
			if _, err := dst.Write(c.data); err != nil {
				src.Close()
				for range queue { // let the reader finish
				}
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	if !toClient && l.greet != nil {
		// The first frame of a server's election connection names the
		// address it is reached at: rewritten to this link's way back.
		greeting, err := readGreeting(src)
		if err != nil {
			close(queue)
			<-writerDone
			dst.Close()
			src.Close()
			return
		}
		p.mu.Lock()
		delay := p.delay
		p.mu.Unlock()
		queue <- chunk{data: l.greet(greeting), due: time.Now().Add(delay), delayed: delay > 0}
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			now := time.Now()
			p.mu.Lock()
			mode, delay := p.mode, p.delay
			if toClient {
				delay += p.replyDelay
			}
			drop := mode == modeBlackhole || (mode == modeDropReplies && toClient) || (mode == modeDropRequests && !toClient)
			if toClient {
				p.lastDown = now
				if id, pw, ok := l.handshake.feed(buf[:n]); ok {
					p.session = proxiedSession{id: id, passwd: pw, target: l.target}
				}
			}
			// A connection that lost bytes has a hole in its stream: once
			// the proxy forwards again (Restore, which closes it, or a
			// Delay) nothing after the hole may reach the other side,
			// or a peer would read a stream with a piece missing (a
			// ZooKeeper follower logs a proposal after a gap, and applies
			// it without those before). It is reset, as a real network
			// would.
			reset := !drop && l.lost && mode == modeForward
			if drop {
				l.lost = true
			} else if !toClient && !reset {
				p.lastUp = time.Now().Add(delay)
				if mode == modeDropReplies {
					// The answer to what this delivers is lost too, even
					// if the server sends it after Restore switched the
					// mode back: the connection loses it on Restore.
					l.lost = true
				}
			}
			p.mu.Unlock()
			if reset {
				break
			}
			if !drop {
				c := chunk{data: append([]byte(nil), buf[:n]...), due: now.Add(delay), delayed: delay > 0}
				if l.wire != nil {
					c.replies = l.wire.feed(c.data, toClient, now)
				}
				queue <- c
			}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-writerDone
	// One side is gone: end the other as a real connection would.
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// readGreeting reads the first frame a server sends on an election
// connection (QuorumCnxManager): protocol version (int64, negative),
// server ID (int64), then the length (int32) and text of the addresses it
// is reached at. An old-style greeting (a non-negative first value) is
// the server ID alone.
func readGreeting(r io.Reader) ([]byte, error) {
	head := make([]byte, 8)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err
	}
	if int64(binary.BigEndian.Uint64(head)) >= 0 {
		return head, nil
	}
	rest := make([]byte, 12)
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(rest[8:12])))
	if n < 0 || n > 2048 {
		return append(head, rest...), nil // not ours to judge: the server refuses it
	}
	addr := make([]byte, n)
	if _, err := io.ReadFull(r, addr); err != nil {
		return nil, err
	}
	return append(append(head, rest...), addr...), nil
}

// advertise returns a greeting rewriter that names addr as the sender's
// election address: ZooKeeper 3.8 answers a connection from a server with
// a lower ID by closing it and connecting back to the address the greeting
// names, which must be a proxy too.
func advertise(addr string) func([]byte) []byte {
	return func(g []byte) []byte {
		if len(g) < 20 {
			return g // old style: no address
		}
		out := make([]byte, 20, 20+len(addr))
		copy(out, g[:16])
		binary.BigEndian.PutUint32(out[16:20], uint32(len(addr)))
		return append(out, addr...)
	}
}
