package zkserver

import (
	"net"
	"sync"
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
// Restore (as a real network would reset it); the client reconnects. The
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
	links      map[*link]struct{}
	done       bool

	wg sync.WaitGroup // accept loops and link goroutines
}

// link is one proxied client connection.
type link struct {
	client, server net.Conn
	lost           bool // bytes were dropped by a blackhole; guarded by Proxy.mu
}

// NewProxy starts a proxy in front of targets (host:port). The caller
// must Close it.
func NewProxy(targets []string) (*Proxy, error) {
	p := &Proxy{targets: append([]string(nil), targets...), links: map[*link]struct{}{}}
	for _, target := range targets {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.Close()
			return nil, err
		}
		p.listeners = append(p.listeners, l)
		p.wg.Add(1)
		go p.accept(l, target)
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
// connections that lost bytes.
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

func (p *Proxy) accept(ln net.Listener, target string) {
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
		l := &link{client: c, server: s}
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
	data []byte
	due  time.Time
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
		for c := range queue {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
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
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode, delay := p.mode, p.delay
			if toClient {
				delay += p.replyDelay
			}
			drop := mode == modeBlackhole || (mode == modeDropReplies && toClient) || (mode == modeDropRequests && !toClient)
			if drop {
				l.lost = true
			} else if !toClient {
				p.lastUp = time.Now().Add(delay)
			}
			p.mu.Unlock()
			if !drop {
				queue <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(delay)}
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
