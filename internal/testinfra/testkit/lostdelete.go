package testkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// LostDelete faults a client's delete of one path and makes the path
// again meanwhile. Once armed, the first delete of path handed to the
// connection (its Observer's Request hook) starts the fault: NewLostDelete
// drops the proxy's replies (the delete applies, its answer is lost) and,
// as soon as a look through obs finds the node gone, other's session
// makes an ephemeral node at the path; NewCutDelete cuts the connection as
// the delete is handed over and holds the next one unanswered, and while
// the client is cut off an operator (obs) deletes the node and other makes
// one. Either way the proxy lets the client back once other's node is
// made. Give its Observer to the client that deletes (connected through
// proxy).
type LostDelete struct {
	Observer *connection.Observer
	armed    atomic.Bool
	made     chan error
	mu       sync.Mutex
	sent     []string // the requests on path since Arm
}

// NewLostDelete returns a LostDelete of path whose delete applies and
// whose answer is lost.
func NewLostDelete(proxy *zktest.Proxy, obs, other *zk.Conn, path string) *LostDelete {
	return newDeleteFault(path, func(l *LostDelete) {
		proxy.DropReplies()
		go func() {
			defer proxy.Restore()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if ok, _, err := obs.Exists(path); err == nil && !ok {
					_, err := other.Create(path, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
					l.made <- err
					return
				}
			}
			l.made <- errors.New("the delete never applied")
		}()
	})
}

// NewCutDelete returns a LostDelete of path whose delete is handed over as
// the connection drops, the client kept cut off (its next connection
// accepted and never answered) while the path is made again.
func NewCutDelete(proxy *zktest.Proxy, obs, other *zk.Conn, path string) *LostDelete {
	return newDeleteFault(path, func(l *LostDelete) {
		proxy.Cut()
		proxy.Blackhole()
		time.Sleep(200 * time.Millisecond)
		go func() {
			defer proxy.Restore()
			time.Sleep(300 * time.Millisecond) // the client waits for a connection
			if err := obs.Delete(path, -1); err != nil {
				l.made <- fmt.Errorf("the operator's delete: %w", err)
				return
			}
			_, err := other.Create(path, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			l.made <- err
		}()
	})
}

func newDeleteFault(path string, fault func(*LostDelete)) *LostDelete {
	l := &LostDelete{made: make(chan error, 1)}
	l.Observer = &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Path != path {
			return nil
		}
		l.mu.Lock()
		l.sent = append(l.sent, fmt.Sprintf("%s#%d", r.Op, r.Attempt))
		l.mu.Unlock()
		if r.Op == "delete" && l.armed.CompareAndSwap(true, false) {
			fault(l)
		}
		return nil
	}}
	return l
}

// Arm makes the next delete of the path the one whose answer is lost.
func (l *LostDelete) Arm() {
	l.mu.Lock()
	l.sent = nil
	l.mu.Unlock()
	l.armed.Store(true)
}

// Made waits for other's node, failing the test if it was not made.
func (l *LostDelete) Made(t testing.TB) {
	t.Helper()
	select {
	case err := <-l.made:
		if err != nil {
			t.Fatalf("the other session's node: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the delete was never sent")
	}
}

// Sent returns the requests on the path since Arm, as "op#attempt".
func (l *LostDelete) Sent() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent...)
}
