package election

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Observe returns a channel that receives the leader's id whenever the
// leader changes, as this client sees the ensemble: first the current
// leader ("" while there is none), then every change, in order. For a slow
// reader the changes queue up, so none seen is dropped and the latest is
// always delivered last. It costs one watch: on the leader's node, so that
// candidates coming and going behind the leader wake no observer. A leader
// whose term is shorter than a read can be missed (a watch is one-shot:
// between its notification and the next read the line may move twice).
// The channel is closed when ctx ends or the client is closed.
func (e *Election) Observe(ctx context.Context) <-chan string {
	out := make(chan string)
	go e.observe(ctx, out)
	return out
}

func (e *Election) observe(ctx context.Context, out chan<- string) {
	defer close(out)
	var (
		pending []string
		last    string
		first   = true
		changed <-chan struct{}
	)
	for {
		if changed == nil {
			id, ch, err := e.look(ctx, true)
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
			if first || id != last {
				pending = append(pending, id)
				last, first = id, false
			}
		}
		var send chan<- string
		var next string
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
