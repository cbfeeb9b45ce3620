package testkit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// OwnNodeFault makes a fault once, between a recipe's watched read of its
// own node (the node about to be held) and the start of the hold. own
// picks the watched read of that node; trigger picks the answered request
// after which the fault is made — the same read when nil, or a later one
// the recipe waits for before its hold starts. fault is given the node's
// path. Give Observer to the client under test (connection.WithObserver),
// then call Made once the recipe's call has returned.
type OwnNodeFault struct {
	Observer *connection.Observer

	made chan error
}

// NewOwnNodeFault returns the fault, not yet made.
func NewOwnNodeFault(own func(path string) bool, trigger func(connection.Request) bool, fault func(node string) error) *OwnNodeFault {
	f := &OwnNodeFault{made: make(chan error, 1)}
	var (
		once    sync.Once
		watched = make(chan string, 1)
	)
	run := func() {
		once.Do(func() {
			select {
			case node := <-watched:
				f.made <- fault(node)
			case <-time.After(10 * time.Second):
				f.made <- errors.New("the node was not read with a watch")
			}
		})
	}
	f.Observer = &connection.Observer{
		Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
			isOwn := r.Op == "getData" && r.Watch && own(r.Path)
			if !isOwn && (trigger == nil || !trigger(r)) {
				return nil
			}
			return func(d connection.RequestDone) {
				if isOwn && d.Err == nil {
					select {
					case watched <- r.Path:
					default:
					}
				}
				if trigger == nil && isOwn && d.Err == nil || trigger != nil && trigger(r) {
					run()
				}
			}
		},
	}
	return f
}

// Made fails t unless the fault was made, without an error.
func (f *OwnNodeFault) Made(t testing.TB) {
	t.Helper()
	select {
	case err := <-f.made:
		if err != nil {
			t.Fatalf("fault not made: %v", err)
		}
	default:
		t.Fatal("the fault's moment never came: the node was not read with a watch")
	}
}

// written is an operator's write to node: its watch fires for a change
// of the data. It waits for the notification to reach the client.
func written(obs *zk.Conn, node string) error {
	if _, err := obs.Set(node, []byte("operator"), -1); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	return nil
}

// WrittenThenMadeAgain is a fault for OwnNodeFault: an operator writes to
// the node (through obs), deletes it, and another session (other) makes
// it again, ephemeral.
func WrittenThenMadeAgain(obs, other *zk.Conn) func(node string) error {
	return func(node string) error {
		if err := written(obs, node); err != nil {
			return err
		}
		if err := obs.Delete(node, -1); err != nil {
			return err
		}
		_, err := other.Create(node, []byte("another participant"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		return err
	}
}

// WrittenThenExpired is a fault for OwnNodeFault: an operator writes to
// the node (through obs), then the session of the client under test is
// expired (through its proxy), taking the node with it.
func WrittenThenExpired(obs *zk.Conn, proxy interface{ ExpireSession() (int64, error) }) func(node string) error {
	return func(node string) error {
		if err := written(obs, node); err != nil {
			return err
		}
		_, err := proxy.ExpireSession()
		return err
	}
}
