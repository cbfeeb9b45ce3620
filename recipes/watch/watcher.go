package watch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

var (
	// ErrClosed means the watcher was closed (Err after Close).
	ErrClosed = errors.New("watch: closed")
	// ErrUnsupported means the server does not take persistent watches
	// (ZooKeeper before 3.6).
	ErrUnsupported = errors.New("watch: server does not take persistent watches (ZooKeeper 3.6 or later)")
	// ErrModeConflict refuses a watcher of a path that a watcher of the
	// same client watches in the other mode (with or without
	// WithRecursive): the server keeps one mode per connection and path.
	ErrModeConflict = errors.New("watch: path watched in the other mode by this client")
)

// removeBound bounds Close's wait for the server to take the watch off.
const removeBound = 10 * time.Second

// The bounds of the wait between two attempts to set the watch again.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
)

// Watcher follows every change of a node, or of a subtree, with one
// persistent watch. Its methods are safe for concurrent use.
type Watcher struct {
	px        connx.Plumbing
	path      string
	recursive bool
	buffer    int
	sub       *connx.PersistentSub

	out    chan Event
	cancel context.CancelFunc
	wg     sync.WaitGroup // run and deliver
	once   sync.Once
	cerr   error // Close's

	mu     sync.Mutex
	queue  []Event
	missed int // events dropped since the queue was last empty
	ended  error
	wake   chan struct{} // capacity 1: the queue has an event
}

// New sets a persistent watch on path (with WithRecursive, a recursive
// one on path and every node below it) and returns once the server has
// set it: a change made after New returns is reported. It waits for a
// session while the client has none, until ctx ends. Events are delivered
// on Events until Close, or until the client is closed.
//
// A bad path or option fails with an error wrapping
// connection.ErrInvalidPath or connection.ErrInvalidOption; a server
// before ZooKeeper 3.6 with ErrUnsupported; a path this client watches in
// the other mode with ErrModeConflict; a closed client with
// connection.ErrClosed. On failure nothing is left behind: no goroutine,
// and no watch on the server (a watch whose answer was lost went with its
// connection, or is taken off).
func New(ctx context.Context, client *connection.Client, path string, opts ...Option) (*Watcher, error) {
	if client == nil {
		return nil, errtext.Errorf("watch: nil client: %w", connection.ErrInvalidOption)
	}
	if ctx == nil {
		return nil, errtext.Errorf("watch: nil context: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, errtext.Errorf("watch: new: %w", err)
	}
	o := options{buffer: DefaultBuffer}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("watch: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	w := &Watcher{
		px:        connx.Of(client),
		path:      path,
		recursive: o.recursive,
		buffer:    o.buffer,
		out:       make(chan Event),
		wake:      make(chan struct{}, 1),
	}
	sub, err := w.px.AddPersistentSink(path, o.recursive, w.notified)
	if err != nil {
		return nil, w.err("new", err)
	}
	w.sub = sub
	runCtx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	// Before the watch is set: a reconnect from now on is seen.
	states := client.Listen(runCtx)
	if err := w.set(ctx); err != nil {
		cancel()
		for range states { // ends as runCtx did
		}
		rctx, rcancel := context.WithTimeout(context.Background(), removeBound)
		defer rcancel()
		_ = w.px.RemovePersistent(rctx, sub)
		return nil, w.err("new", err)
	}
	w.wg.Add(2)
	go w.run(runCtx, states)
	go w.deliver(runCtx)
	return w, nil
}

// err is the error of op from the connection's, with the package's
// sentinels: "watch: new /path: ...".
func (w *Watcher) err(op string, err error) error {
	switch {
	case errors.Is(err, connx.ErrWatchUnsupported):
		err = ErrUnsupported
	case errors.Is(err, connx.ErrWatchModeConflict):
		err = ErrModeConflict
	}
	return errtext.Errorf("watch: %s %s: %w", op, w.path, err)
}

// Path returns the watched path.
func (w *Watcher) Path() string { return w.path }

// Events returns the channel of the watcher's events, in the order the
// server sent them. It is closed when the watcher ends: at Close, or when
// the client is closed (Err says which). One channel for all readers.
func (w *Watcher) Events() <-chan Event { return w.out }

// Err returns nil while the watcher runs, then why it ended: ErrClosed
// after Close, an error wrapping connection.ErrClosed when its client was
// closed.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// Close ends the watcher: Events is closed, and the server's watch is
// taken off (unless another watcher of the client's shares it), waiting at
// most a few seconds for the server's answer. It returns an error when
// the server refused to take the watch off, or did not answer in time
// (the watch then goes when the request is applied, or with its
// connection). It is idempotent: later calls return the first's error.
func (w *Watcher) Close() error {
	w.once.Do(func() {
		w.end(ErrClosed)
		w.cancel()
		w.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), removeBound)
		defer cancel()
		if err := w.px.RemovePersistent(ctx, w.sub); err != nil {
			w.cerr = errtext.Errorf("watch: close %s: %w", w.path, err)
		}
	})
	return w.cerr
}

// end records why the watcher ended, the first reason only.
func (w *Watcher) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended == nil {
		w.ended = err
	}
}

// notified is told each notification of the watch, on the client's
// receive goroutine: it queues the event and must not block.
func (w *Watcher) notified(ev zk.Event) {
	var t EventType
	switch ev.Type {
	case zk.EventNodeCreated:
		t = Created
	case zk.EventNodeDataChanged:
		t = Changed
	case zk.EventNodeDeleted:
		t = Deleted
	case zk.EventNodeChildrenChanged:
		t = ChildrenChanged
	default:
		return
	}
	w.push(Event{Type: t, Path: ev.Path})
}

// push queues ev for the reader. Once the queue is full, events are
// dropped and counted until the reader has taken every queued one: then
// Overflow says how many.
func (w *Watcher) push(ev Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil {
		return
	}
	if w.missed > 0 || len(w.queue) >= w.buffer {
		w.missed++
		return
	}
	w.queue = append(w.queue, ev)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the next event for the reader: a queued one, or Overflow
// once the queue is empty after drops.
func (w *Watcher) next() (Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) > 0 {
		ev := w.queue[0]
		w.queue[0] = Event{}
		w.queue = w.queue[1:]
		if len(w.queue) == 0 {
			w.queue = nil // let a burst's array go
		}
		return ev, true
	}
	if w.missed > 0 {
		ev := Event{Type: Overflow, Path: w.path, Missed: w.missed}
		w.missed = 0
		return ev, true
	}
	return Event{}, false
}

// deliver hands the queued events to the reader until the watcher ends.
func (w *Watcher) deliver(ctx context.Context) {
	defer w.wg.Done()
	defer close(w.out)
	for {
		ev, ok := w.next()
		if !ok {
			select {
			case <-w.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case w.out <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// run sets the watch again whenever the client reconnects: the server
// dropped it with the connection it was set on (go-zookeeper registers its
// own watches again on a new connection, never these).
func (w *Watcher) run(ctx context.Context, states <-chan connection.State) {
	defer w.wg.Done()
	for {
		select {
		case s, ok := <-states:
			if !ok {
				if ctx.Err() == nil {
					// The client was closed.
					w.end(errtext.Errorf("watch: %s: %w", w.path, connection.ErrClosed))
					w.cancel()
				}
				return
			}
			if s == connection.Reconnected || s == connection.Connected {
				w.setAgain(ctx)
			}
		case <-ctx.Done():
			return
		}
	}
}

// setAgain sets the watch again in the client's current session, and
// then sends Resync.
func (w *Watcher) setAgain(ctx context.Context) {
	if err := w.set(ctx); err != nil {
		if ctx.Err() == nil && !errors.Is(err, connection.ErrClosed) {
			w.px.Logger().Error("watch: cannot set the watch again", "path", w.path, "error", err)
		}
		return
	}
	w.push(Event{Type: Resync, Path: w.path})
}

// set sets the watch in the client's current session, trying again while
// the connection fails before the answer (in the session that follows
// too: an addWatch is safe in any session), until it is set, ctx ends or
// the server refuses it.
func (w *Watcher) set(ctx context.Context) error {
	wait := retryMin
	for {
		_, err := w.px.AddWatch(ctx, w.path, w.recursive)
		if err == nil || ctx.Err() != nil || !lostAnswer(err) {
			return err
		}
		w.px.Logger().Warn("watch: setting the watch failed", "path", w.path, "error", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errtext.Errorf("%w (after %w)", ctx.Err(), err)
		}
		wait = min(2*wait, retryMax)
	}
}

// lostAnswer reports whether err says the server's answer did not come
// (the connection failed, the session ended): the watch is set again on
// the next connection.
func lostAnswer(err error) bool {
	return !errors.Is(err, connection.ErrClosed) &&
		(errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, connection.ErrSessionLost))
}
