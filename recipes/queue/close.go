package queue

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// closer is what Close ends: the calls in progress and the items taken
// and not yet consumed or released.
type closer struct {
	closing     context.Context // cancelled by Close: it ends the calls in progress
	stopClosing context.CancelFunc

	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
	items  map[*Item]struct{}
}

func (c *closer) init() {
	c.closing, c.stopClosing = context.WithCancel(context.Background())
	c.items = map[*Item]struct{}{}
}

// enter begins a call: its context is ctx, also cancelled by Close, and
// leave ends it. After Close it fails with ErrClosed.
func (q *Queue) enter(ctx context.Context) (context.Context, func(), error) {
	q.c.mu.Lock()
	defer q.c.mu.Unlock()
	if q.c.closed {
		return nil, nil, ErrClosed
	}
	q.c.calls.Add(1)
	cctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(q.c.closing, cancel)
	return cctx, func() {
		stop()
		cancel()
		q.c.calls.Done()
	}, nil
}

// callErr is the error of a call on ctx that failed with err: ErrClosed
// when Close ended it, not the caller.
func (q *Queue) callErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && q.c.closing.Err() != nil {
		return ErrClosed
	}
	return err
}

// track records a take until it is consumed or released; a take made
// after Close began is released at once, and track reports false.
func (q *Queue) track(it *Item) bool {
	q.c.mu.Lock()
	if !q.c.closed {
		q.c.items[it] = struct{}{}
		q.c.mu.Unlock()
		return true
	}
	q.c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lockcore.CleanupTimeout(it.hold.Session))
	defer cancel()
	_ = it.Release(ctx)
	return false
}

func (q *Queue) isClosed() bool {
	q.c.mu.Lock()
	defer q.c.mu.Unlock()
	return q.c.closed
}

func (q *Queue) untrack(it *Item) {
	q.c.mu.Lock()
	delete(q.c.items, it)
	q.c.mu.Unlock()
}

// Close ends this Queue value: a Put, Take or TryTake in progress returns
// an error matching ErrClosed (nothing it took is kept; a Put whose create
// was sent may have added its item, as for any Put that fails), and every
// item taken through it and not yet consumed or released is released —
// back at its place in the queue for another worker, its take ended (Done
// closed, with ErrFinished) before the delete is sent. Close waits for the
// calls in progress to return and for the releases' answers, as long as
// ctx allows; if ctx ends first the error wraps ctx's, and a taken node
// not yet deleted is deleted in the background while its session lives.
// The error joins the releases' errors. Every method of the Queue returns
// ErrClosed afterwards; Consume and Release of an item taken before work
// as before (ErrFinished for one Close released). The queue's nodes — its
// items — are the queue's, not this value's: Close deletes none of them.
// Close is idempotent.
func (q *Queue) Close(ctx context.Context) error {
	q.c.mu.Lock()
	if q.c.closed {
		q.c.mu.Unlock()
		return nil
	}
	q.c.closed = true
	q.c.mu.Unlock()
	q.c.stopClosing()
	var errs []error
	// The calls end at once with q.c.closing, but a take's create in
	// flight is never abandoned (claim): it is bounded by the session
	// timeout, not by ctx. If ctx ends first, this goroutine ends with
	// that call, and an item it takes then is released by track.
	returned := make(chan struct{})
	go func() {
		q.c.calls.Wait()
		close(returned)
	}()
	select {
	case <-returned:
	case <-ctx.Done():
		errs = append(errs, q.errorf("close", ctx.Err()))
	}
	q.c.mu.Lock()
	items := make([]*Item, 0, len(q.c.items))
	for it := range q.c.items {
		items = append(items, it)
	}
	q.c.mu.Unlock()
	for _, it := range items {
		if err := it.Release(ctx); err != nil && !errors.Is(err, ErrFinished) && !errors.Is(err, ErrItemLost) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
