package connection

import (
	"context"
	"sync"
)

// listener delivers state transitions to one Listen channel. Transitions
// wait in an unbounded queue, so a slow reader neither blocks the client
// nor misses one (a LOST above all).
type listener struct {
	ch chan State

	mu    sync.Mutex
	queue []State
	wake  chan struct{} // capacity 1
}

// Listen returns a channel that delivers every state transition after the
// call, in order, until ctx is done or the client is closed; then it is
// closed. Each listener has its own queue: a listener that reads slowly
// delays only itself.
func (c *Client) Listen(ctx context.Context) <-chan State {
	l := &listener{ch: make(chan State), wake: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		close(l.ch)
		return l.ch
	}
	c.listeners[l] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer close(l.ch)
		defer func() {
			c.mu.Lock()
			delete(c.listeners, l)
			c.mu.Unlock()
		}()
		for {
			s, ok := l.next()
			if !ok {
				select {
				case <-l.wake:
					continue
				case <-ctx.Done():
					return
				case <-c.stop:
					return
				}
			}
			select {
			case l.ch <- s:
			case <-ctx.Done():
				return
			case <-c.stop:
				return
			}
		}
	}()
	return l.ch
}

// push queues s; it never blocks.
func (l *listener) push(s State) {
	l.mu.Lock()
	l.queue = append(l.queue, s)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener) next() (State, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return 0, false
	}
	s := l.queue[0]
	l.queue = l.queue[1:]
	return s, true
}
