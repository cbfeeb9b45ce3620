package guardtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Writers hammers a hold's guard: goroutines send guarded transactions
// without pause until Stop, and count the answers. A test races them
// against the hold's end and checks the server's record against the
// counts.
type Writers struct {
	// Committed counts the transactions answered as committed; Refused,
	// those refused with connection.ErrGuardFailed, AtServer of which the
	// server refused (the answer carries the ops' responses).
	Committed, Refused, AtServer atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup
}

// StartWriters starts n goroutines, each calling send (a guarded
// Multi) again and again until Stop. An error other than
// connection.ErrGuardFailed fails t and ends that goroutine.
func StartWriters(t testing.TB, n int, send func() ([]zk.MultiResponse, error)) *Writers {
	w := &Writers{stop: make(chan struct{})}
	for range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				res, err := send()
				switch {
				case err == nil:
					w.Committed.Add(1)
				case errors.Is(err, connection.ErrGuardFailed):
					w.Refused.Add(1)
					if len(res) > 0 {
						w.AtServer.Add(1)
					}
				default:
					t.Errorf("guarded transaction: %v", err)
					return
				}
			}
		}()
	}
	return w
}

// Stop stops the writers and waits until each has its last answer.
func (w *Writers) Stop() {
	close(w.stop)
	w.wg.Wait()
}

// StateNode makes the empty persistent node p on c, for a test's guarded
// writes, and returns the write of v to it (any version).
func StateNode(t testing.TB, ctx context.Context, c *connection.Client, p string) func(v string) *zk.SetDataRequest {
	t.Helper()
	if _, err := c.Create(ctx, p, nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	return func(v string) *zk.SetDataRequest { return set(p, v) }
}
