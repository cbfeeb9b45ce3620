package cache

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// EventType says what an Event reports.
type EventType int

const (
	// Created: a node entered the view (Node). Its parent's Created came
	// before it.
	Created EventType = iota + 1
	// Changed: a node's data or version changed (Node, and Old before),
	// or whether it can be read whole (Node.Err).
	Changed
	// Deleted: a node left the view (Node, as last known). Its children's
	// Deleted came before it. A node deleted and created again between two
	// reads gives Deleted, then Created. Err is set when the server did
	// not delete it: the view was emptied or started over.
	Deleted
	// Initialized: the first full load is in. It comes once per cache.
	Initialized
	// Untrusted: the view no longer follows the server (Err says why:
	// the connection is suspended, the session lost, the client closed).
	// The view keeps its data. The Untrusted channel is closed before it
	// is sent.
	Untrusted
	// Trusted: the view follows the server again, or for the first time
	// (right after Initialized). Trusted and Untrusted alternate, with
	// one exception: when the client is closed while the view is not
	// trusted (before its first Trusted, or after an Untrusted), an
	// Untrusted whose Err wraps connection.ErrClosed says so, as the
	// last of them. A listener that starts after the client was closed,
	// or whose Resync follows an Overflow after it, gets that Untrusted
	// right after its Resync: every listener hears of the closure.
	Trusted
	// Overflow: the listener fell WithBuffer events behind, and at least
	// Missed events were dropped. A Resync follows.
	Overflow
	// Resync: Snapshot is the view now; the events that follow apply to
	// it. Every listener's first event is a Resync, and one follows every
	// Overflow.
	Resync
)

// String returns the event type's name: CREATED, CHANGED, and so on.
func (t EventType) String() string {
	switch t {
	case Created:
		return "CREATED"
	case Changed:
		return "CHANGED"
	case Deleted:
		return "DELETED"
	case Initialized:
		return "INITIALIZED"
	case Untrusted:
		return "UNTRUSTED"
	case Trusted:
		return "TRUSTED"
	case Overflow:
		return "OVERFLOW"
	case Resync:
		return "RESYNC"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one change of a cache's view, or of its trust.
type Event struct {
	Type EventType
	// Path is the node's path (Created, Changed, Deleted).
	Path string
	// Node is the node after the change (Created, Changed), or as it was
	// last known (Deleted).
	Node Node
	// Old is the node before the change (Changed).
	Old Node
	// Err says why the view is no longer trusted (Untrusted), or why a
	// node left the view without the server saying it was deleted
	// (Deleted): the view was emptied on a lost session
	// (WithClearOnSessionLoss: the session's error), or started over on a
	// replaced database (an error wrapping connection.ErrNewHistory). It
	// is nil for a node deleted on the server.
	Err error
	// Missed is how many events were dropped, at least (Overflow).
	Missed int
	// Snapshot is the view the following events apply to (Resync).
	Snapshot Snapshot
}

// DefaultBuffer is how many events a listener's queue holds unless
// WithBuffer says otherwise. A listener that falls further behind gets
// Overflow and a Resync. Each queued event holds a Node (the data is
// shared with the view, not copied).
const DefaultBuffer = 4096

// ListenOption configures a listener.
type ListenOption func(*listenOptions) error

type listenOptions struct {
	buffer int
}

// WithBuffer bounds the listener's queue to n events (at least 1).
func WithBuffer(n int) ListenOption {
	return func(o *listenOptions) error {
		if n < 1 {
			return invalid("buffer %d must be at least 1", n)
		}
		o.buffer = n
		return nil
	}
}

// Listen returns a channel of the cache's events, from a Resync of the
// view at the time of the call on, until ctx ends or the cache is closed;
// then the channel is closed. Each listener has a queue of its own,
// bounded by WithBuffer (DefaultBuffer): the cache never waits for a
// listener, and a listener that falls that far behind receives Overflow,
// then a Resync of the view when it reads again.
func (c *Cache) Listen(ctx context.Context, opts ...ListenOption) (<-chan Event, error) {
	o := listenOptions{buffer: DefaultBuffer}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("cache: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	l := &listener{ch: make(chan Event), max: o.buffer, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errtext.Errorf("cache: listen %s: %w", c.root, ErrClosed)
	}
	l.queue = c.afterResync(append(l.queue, Event{Type: Resync, Snapshot: c.snapshotLocked()}))
	c.listeners[l] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	go c.deliver(ctx, l)
	return l.ch, nil
}

// afterResync queues what a listener hears right after a Resync: once the
// client is closed, the closure's Untrusted — which a listener that starts
// later, or that missed events, would not hear otherwise. c.mu is held.
func (c *Cache) afterResync(queue []Event) []Event {
	if c.clientErr != nil {
		queue = append(queue, Event{Type: Untrusted, Err: c.clientErr})
	}
	return queue
}

// listener queues one Listen channel's events. push never blocks.
type listener struct {
	ch  chan Event
	max int

	mu       sync.Mutex
	queue    []Event
	overflow bool // events were dropped: Overflow, then Resync, are due
	missed   int
	wake     chan struct{} // capacity 1
}

// push queues ev; c.mu is held, so a Resync's snapshot and the events
// queued after it never overlap.
func (l *listener) push(ev Event) {
	l.mu.Lock()
	switch {
	case l.overflow:
		l.missed++
	case len(l.queue) >= l.max:
		l.missed += len(l.queue) + 1
		clear(l.queue)
		l.queue, l.overflow = l.queue[:0], true
	default:
		l.queue = append(l.queue, ev)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// next returns the next event to send, or false when there is none.
func (l *listener) next() (Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.overflow {
		return Event{Type: Overflow, Missed: l.missed}, true
	}
	if len(l.queue) == 0 {
		return Event{}, false
	}
	ev := l.queue[0]
	l.queue[0] = Event{}
	l.queue = l.queue[1:]
	return ev, true
}

// deliver sends l's events to its channel until ctx ends or the cache
// closes.
func (c *Cache) deliver(ctx context.Context, l *listener) {
	defer c.wg.Done()
	defer close(l.ch)
	defer func() {
		c.mu.Lock()
		delete(c.listeners, l)
		c.mu.Unlock()
	}()
	send := func(ev Event) bool {
		select {
		case l.ch <- ev:
			return true
		case <-ctx.Done():
		case <-c.ctx.Done():
		}
		return false
	}
	for {
		ev, ok := l.next()
		if !ok {
			select {
			case <-l.wake:
				continue
			case <-ctx.Done():
				return
			case <-c.ctx.Done():
				return
			}
		}
		if !send(ev) {
			return
		}
		if ev.Type == Overflow {
			// The reader is back: the view now replaces what it missed.
			// Taken under c.mu, so no event is both in it and after it.
			c.mu.RLock()
			l.mu.Lock()
			snap := c.snapshotLocked()
			clear(l.queue)
			l.queue, l.overflow, l.missed = c.afterResync(l.queue[:0]), false, 0
			l.mu.Unlock()
			c.mu.RUnlock()
			if !send(Event{Type: Resync, Snapshot: snap}) {
				return
			}
		}
	}
}
