package election

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Observe returns a channel that receives the leader whenever the leader
// changes, as this client sees the ensemble: first the current leader, then
// every change, in order. A leader is the first Participant in line, its
// Leader field set; while there is none, the channel receives the zero
// Participant (Leader false). A leader's id may be empty (Curator's
// LeaderLatch without an id): tell "no leader" by Leader, never by ID. A
// new term is a change even under the same id: its Node and Token differ.
// For a slow reader the changes queue up, so none seen is dropped and the
// latest is always delivered last. It costs one watch: on the leader's
// node, so that candidates coming and going behind the leader wake no
// observer. A leader whose term is shorter than a read can be missed (a
// watch is one-shot: between its notification and the next read the line
// may move twice). The channel is closed when ctx ends, the Election is
// closed (at once when Observe is called after Close) or the client is
// closed, and nothing of Observe runs after that; the watch it waited on
// stays until it fires, shared by every observer of the path on the
// client, so calls that end add none.
func (e *Election) Observe(ctx context.Context) <-chan Participant {
	out := make(chan Participant)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		close(out)
		return out
	}
	e.observers.Add(1)
	octx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.closing, cancel)
	go func() {
		defer e.observers.Done()
		defer cancel()
		defer stop()
		e.observe(octx, out)
	}()
	return out
}

func (e *Election) observe(ctx context.Context, out chan<- Participant) {
	defer close(out)
	var (
		pending []Participant
		last    Participant
		first   = true
		changed <-chan struct{}
	)
	for {
		if changed == nil {
			l, ch, err := e.look(ctx, true)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, connection.ErrClosed) {
					return
				}
				// The retry policy gave up (a long outage): try again
				// once a session is there.
				if _, err := e.client.WaitSession(ctx); err != nil {
					return
				}
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					return
				}
				continue
			}
			changed = ch
			if first || l != last {
				pending = append(pending, l)
				last, first = l, false
			}
		}
		var send chan<- Participant
		var next Participant
		if len(pending) > 0 {
			send, next = out, pending[0]
		}
		select {
		case send <- next:
			pending = pending[1:]
		case <-changed:
			changed = nil
		case <-ctx.Done():
			return
		}
	}
}
