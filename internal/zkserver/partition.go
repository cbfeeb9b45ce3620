package zkserver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrNoPartitions is returned by Partition and Heal on an ensemble started
// without WithServerPartitions, or on a backend that cannot make them.
var ErrNoPartitions = errors.New("zktest: server partitions need WithServerPartitions and the local backend")

// WithServerPartitions puts a proxy on every link between two servers
// (local backend, 3 or more servers), so that Partition can cut servers
// off from each other while clients still reach them: a follower cut off
// from the leader goes on answering its clients until syncLimit × tickTime
// has passed, while the leader may expire their sessions.
func WithServerPartitions() Option {
	return func(c *config) error {
		c.partitions = true
		return nil
	}
}

// quorumLinks are the proxies between servers: links[a][b] carries what
// server a sends to server b's quorum and election ports.
type quorumLinks [][]*Proxy

// newQuorumLinks starts a proxy for every ordered pair of servers, in front
// of ports[3*b+1] and ports[3*b+2] (b's quorum and election ports).
func newQuorumLinks(n int, ports []int) (quorumLinks, error) {
	links := make(quorumLinks, n)
	for a := range n {
		links[a] = make([]*Proxy, n)
		for b := range n {
			if a == b {
				continue
			}
			p, err := NewProxy([]string{
				net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*b+1])),
				net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*b+2])),
			})
			if err != nil {
				links.close()
				return nil, err
			}
			links[a][b] = p
		}
	}
	// A server greets a server it connects to for elections with its own
	// election address, and one with a higher ID answers by connecting
	// back to that address instead: each link's greeting names the link
	// the other way, so that no election connection bypasses the proxies.
	for a := range n {
		for b := range n {
			if a != b {
				back := links[b][a].Servers()[1]
				links[a][b].mu.Lock()
				links[a][b].greet = []func([]byte) []byte{nil, advertise(back)}
				links[a][b].mu.Unlock()
			}
		}
	}
	return links, nil
}

// quorum returns the server lines of server a's configuration: its own
// ports, and the proxies of its links for every other server.
func (l quorumLinks) quorum(a int, ports []int) string {
	var q strings.Builder
	for b := range l {
		if b == a {
			fmt.Fprintf(&q, "server.%d=127.0.0.1:%d:%d\n", b+1, ports[3*b+1], ports[3*b+2])
			continue
		}
		addrs := l[a][b].Servers()
		_, qp, _ := net.SplitHostPort(addrs[0])
		_, ep, _ := net.SplitHostPort(addrs[1])
		fmt.Fprintf(&q, "server.%d=127.0.0.1:%s:%s\n", b+1, qp, ep)
	}
	return q.String()
}

func (l quorumLinks) close() {
	for _, row := range l {
		for _, p := range row {
			if p != nil {
				p.Close()
			}
		}
	}
}

// Partition cuts servers a and b off from each other, both ways: their
// links deliver nothing (a blackhole, as a real partition: the servers
// notice by their own timeouts). Clients still reach both.
func (e *Ensemble) Partition(a, b int) error {
	links, err := e.links(a, b)
	if err != nil {
		return err
	}
	links[a][b].Blackhole()
	links[b][a].Blackhole()
	return nil
}

// Isolate partitions server i from every other server.
func (e *Ensemble) Isolate(i int) error {
	for j := range e.b.Addrs() {
		if j != i {
			if err := e.Partition(i, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// Heal restores every link between servers.
func (e *Ensemble) Heal() error {
	links, err := e.links(0, 0)
	if err != nil {
		return err
	}
	for _, row := range links {
		for _, p := range row {
			if p != nil {
				p.Restore()
			}
		}
	}
	return nil
}

// DelayServerLinks delays every byte between servers by d, each way (the
// quorum and election ports; WithServerPartitions): with clients behind a
// Proxy delayed alike, every hop of a request costs d, as across a
// datacenter. The delay is kept to within microseconds, not the runtime
// timers' millisecond. DelayServerLinks(0) removes it.
func (e *Ensemble) DelayServerLinks(d time.Duration) error {
	links, err := e.links(0, 0)
	if err != nil {
		return err
	}
	for _, row := range links {
		for _, p := range row {
			if p != nil {
				p.Delay(d)
			}
		}
	}
	return nil
}

func (e *Ensemble) links(a, b int) (quorumLinks, error) {
	lb, ok := e.b.(*localBackend)
	if !ok || lb.links == nil {
		return nil, ErrNoPartitions
	}
	if err := e.check(a); err != nil {
		return nil, err
	}
	if err := e.check(b); err != nil {
		return nil, err
	}
	return lb.links, nil
}
