package zkserver

import (
	"errors"
	"testing"
	"time"
)

// TestElectionConnectionsGoThroughLinks: every pair of servers talks
// through the proxies of its links, on the election port too. ZooKeeper
// answers an election connection from a server with a lower ID by
// connecting back to the address in its greeting; unless the greeting
// names a proxy, that connection bypasses the links (and a delay or a
// partition misses it). Each server is restarted in turn, so that every
// pair connects again from both sides.
func TestElectionConnectionsGoThroughLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	e, err := New(WithServers(3), WithServerPartitions(), WithLogf(t.Logf))
	if errors.Is(err, ErrNoZooKeeper) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	links := e.b.(*localBackend).links
	through := func(a, b int) int {
		n := 0
		for _, p := range []*Proxy{links[a][b], links[b][a]} {
			p.mu.Lock()
			for l := range p.links {
				if l.target == 1 {
					n++
				}
			}
			p.mu.Unlock()
		}
		return n
	}
	check := func(when string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for a := range 3 {
			for b := a + 1; b < 3; b++ {
				for through(a, b) == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("%s: no election connection between servers %d and %d goes through their links", when, a+1, b+1)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}
	}
	check("after the start")
	for i := range 3 {
		if err := e.Stop(i); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(i); err != nil {
			t.Fatal(err)
		}
		check("after a restart")
	}
}
