package shared

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// Watcher follows a shared value: its current value, kept by a watch on
// the node, and its changes. It is a cache of the one node (recipes/cache
// with WithMaxDepth(0), Curator's NodeCache), with one worker goroutine,
// and a goroutine per listener while it listens; Close stops them all.
// Its methods are safe for concurrent use.
type Watcher[T any] struct {
	v     *Value[T]
	cache *cache.Cache

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Watch starts following the value and returns once the first read is in
// (or ctx ends). Close the Watcher when done.
func (v *Value[T]) Watch(ctx context.Context) (*Watcher[T], error) {
	// A closed client fails here: a cache of it would wait for its first
	// load until ctx ends.
	if _, err := v.client.WaitSession(ctx); err != nil {
		return nil, errtext.Errorf("shared: watch %s: %w", v.path, err)
	}
	c, err := cache.New(v.client, v.path, cache.WithMaxDepth(0))
	if err != nil {
		return nil, errtext.Errorf("shared: watch %s: %w", v.path, err)
	}
	select {
	case <-c.Initialized():
	case <-ctx.Done():
		c.Close()
		return nil, errtext.Errorf("shared: watch %s: %w", v.path, ctx.Err())
	}
	return &Watcher[T]{v: v, cache: c}, nil
}

// Current returns the value as the watch last saw it, without a request:
// the seed at version -1 while the node does not exist, an error matching
// ErrCorrupt when its data do not decode. While the connection is
// suspended (Untrusted is closed) it is the last value known, which may be
// behind the server's; after the servers' database was replaced, it is
// the seed until the view has read the node again.
func (w *Watcher[T]) Current() (Versioned[T], error) {
	n, ok := w.cache.Get(w.v.path)
	if !ok {
		return w.v.absent(), nil
	}
	if n.Err != nil {
		return Versioned[T]{}, errtext.Errorf("shared: %s: %w", w.v.path, n.Err)
	}
	return w.v.versioned(n.Data, &n.Stat)
}

// Listen returns a channel that receives the current value at once, then
// each new value, until ctx ends or the Watcher is closed; then it is
// closed. The watcher never waits for a listener: one that reads slowly
// receives the newest value when it reads, not every value in between
// (Curator's SharedValueListener is no different: each notification reads
// the node anew). A value whose data do not decode is not sent; Current
// returns its error. A node deleted gives the seed at version -1. After
// the servers' database was replaced, the listener is given the node's
// value in the new history once the watch has read it again (the seed if
// the node is not there), and nothing in between.
func (w *Watcher[T]) Listen(ctx context.Context) (<-chan Versioned[T], error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errtext.Errorf("shared: listen %s: %w", w.v.path, ErrClosed)
	}
	events, err := w.cache.Listen(ctx, cache.WithBuffer(64))
	if err != nil {
		return nil, errtext.Errorf("shared: listen %s: %w", w.v.path, closedErr(err))
	}
	out := make(chan Versioned[T])
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(out)
		w.forward(events, out)
	}()
	return out, nil
}

// forward turns the cache's events into values on out, keeping only the
// newest one not yet taken. It returns when events closes.
//
// A Deleted with Err is the view letting go of the node without the
// server saying it was deleted: the view starts over after the servers'
// database was replaced (connection.ErrNewHistory). It is no value: the
// node may be there in the new history, with a value of its own, and the
// seed would tell the listener of a deletion that never happened. The
// reload says what the node is: its Created, or, when the view is trusted
// again without the node, the seed.
func (w *Watcher[T]) forward(events <-chan cache.Event, out chan<- Versioned[T]) {
	var (
		pending     Versioned[T]
		pendingData []byte
		has         bool
		sent        bool
		lastSent    Versioned[T]
		lastData    []byte
		present     bool // the node is in the view, as the events tell it
		reloading   bool // let go of without a deletion, and not trusted since
	)
	offer := func(n cache.Node, ok bool) {
		var v Versioned[T]
		if !ok {
			v = w.v.absent()
		} else {
			var err error
			if n.Err != nil {
				return
			}
			if v, err = w.v.versioned(n.Data, &n.Stat); err != nil {
				return
			}
		}
		// The listener has it: a Resync of the same node, or the same
		// node met again in a reload. The data too, for a history that
		// started over can give another node the same czxid and version.
		if sent && !has && v.Version == lastSent.Version && v.Czxid == lastSent.Czxid && bytes.Equal(n.Data, lastData) {
			return
		}
		pending, pendingData, has = v, n.Data, true
	}
	for {
		var send chan<- Versioned[T]
		if has {
			send = out
		}
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			switch ev.Type {
			case cache.Resync:
				n, ok := ev.Snapshot.Get(w.v.path)
				present = ok
				if ev.Snapshot.Trusted() {
					reloading = false // its Trusted may be among the events missed
				}
				if ok || !reloading {
					offer(n, ok)
				}
			case cache.Created, cache.Changed:
				present = true
				offer(ev.Node, true)
			case cache.Deleted:
				present = false
				if ev.Err != nil {
					reloading = true
					break
				}
				offer(cache.Node{}, false)
			case cache.Trusted:
				if reloading && !present {
					offer(cache.Node{}, false)
				}
				reloading = false
			}
		case send <- pending:
			lastSent, lastData, sent, has = pending, pendingData, true, false
		}
	}
}

// Untrusted returns a channel closed when the watch's current trust
// period ends: the connection is suspended, the session lost, the Watcher
// or the client closed. While it is closed, Current may be behind the
// server; a new period has a channel of its own.
func (w *Watcher[T]) Untrusted() <-chan struct{} { return w.cache.Untrusted() }

// Sync waits until Current shows every write committed before Sync was
// called.
func (w *Watcher[T]) Sync(ctx context.Context) error {
	if err := w.cache.Sync(ctx); err != nil {
		return errtext.Errorf("shared: sync %s: %w", w.v.path, closedErr(err))
	}
	return nil
}

// Close stops the watch and its listeners (their channels close) and
// waits for their goroutines. It is idempotent.
func (w *Watcher[T]) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	err := w.cache.Close()
	w.wg.Wait()
	return err
}

// closedErr makes the cache's ErrClosed match ErrClosed too.
func closedErr(err error) error {
	if errors.Is(err, cache.ErrClosed) {
		return errtext.Errorf("%w (%w)", ErrClosed, err)
	}
	return err
}
