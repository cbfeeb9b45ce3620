package connection

import (
	"context"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// hostLookupBound bounds the DNS lookups of one server list.
const hostLookupBound = 3 * time.Second

// hostList is the host provider (zk.HostProvider) of a handle of a client
// that tracks its ensemble: go-zookeeper's DNS provider's rotation — every
// address of every server, shuffled, tried in turn — over a list that
// the ensemble tracker replaces whole (set) while the handle runs, so
// that the next connection of the session goes to a current member.
type hostList struct {
	// removed is told (without blocking) when a connection is made to
	// an address that a set removed while it was being made.
	removed chan<- struct{}

	mu    sync.Mutex
	addrs []string // resolved host:port, shuffled
	curr  int
	last  int    // the address last connected to; -1 before any
	next  string // the address Next returned last
}

// resolve looks up each server's host and returns every address, shuffled.
func resolve(servers []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hostLookupBound)
	defer cancel()
	var out []string
	for _, s := range servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return nil, err
		}
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			out = append(out, net.JoinHostPort(ip, port))
		}
	}
	if len(out) == 0 {
		return nil, errtext.Errorf("%w: no address found for %v", ErrNoServers, servers)
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

// Init is go-zookeeper's first call, with the servers the handle was made
// with.
func (h *hostList) Init(servers []string) error {
	addrs, err := resolve(servers)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addrs, h.curr, h.last = addrs, -1, -1
	return nil
}

// set replaces the list; the rotation starts again on the new one.
func (h *hostList) set(servers []string) error {
	addrs, err := resolve(servers)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addrs, h.curr, h.last = addrs, -1, -1
	return nil
}

// has reports whether addr, as Next returned it, is on the list.
func (h *hostList) has(addr string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.addrs, addr)
}

func (h *hostList) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.addrs)
}

// Next returns the next address; retryStart is true once every address
// was tried since the last connection (go-zookeeper then pauses).
func (h *hostList) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.addrs)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	h.next = h.addrs[h.curr]
	return h.next, retryStart
}

// Connected is go-zookeeper's word that the address Next returned last
// has the session.
func (h *hostList) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
	if !slices.Contains(h.addrs, h.next) && h.removed != nil {
		select {
		case h.removed <- struct{}{}:
		default:
		}
	}
}
