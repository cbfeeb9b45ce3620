package curatorqueue

import (
	"context"
	"errors"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// closer is what Close ends: the calls in progress and the messages held
// under the lock path and not yet consumed or released.
type closer struct {
	closing     context.Context // cancelled by Close: it ends the calls in progress
	stopClosing context.CancelFunc

	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
	held   map[*Message]struct{}
}

func (c *closer) init() {
	c.closing, c.stopClosing = context.WithCancel(context.Background())
	c.held = map[*Message]struct{}{}
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

// track records a held message until it is consumed or released; one
// taken after Close began is released at once, and track reports false.
func (q *Queue) track(m *Message) bool {
	q.c.mu.Lock()
	if !q.c.closed {
		q.c.held[m] = struct{}{}
		q.c.mu.Unlock()
		return true
	}
	q.c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lockcore.CleanupTimeout(m.hold.Session))
	defer cancel()
	_ = m.Release(ctx)
	return false
}

func (q *Queue) untrack(m *Message) {
	q.c.mu.Lock()
	delete(q.c.held, m)
	q.c.mu.Unlock()
}

// Close ends this Queue value: a Put, Take or TryTake in progress returns
// an error matching ErrClosed (a Put whose create was sent may have added
// its message, as for any Put that fails), and every message held under
// the lock path through it and not yet consumed or released is released:
// back at its place for another consumer, its hold ended (Done closed,
// with ErrFinished) before its lock's delete is sent. Close waits for the
// calls in progress to return and for the releases' answers, as long as
// ctx allows; if ctx ends first the error wraps ctx's, and a lock node
// not yet deleted is deleted in the background while its session lives.
// Every method of the Queue returns ErrClosed afterwards; Consume and
// Release of a message taken before work as before. The queue's messages
// are the queue's, not this value's: Close deletes none of them. Close is
// idempotent.
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
	held := make([]*Message, 0, len(q.c.held))
	for m := range q.c.held {
		held = append(held, m)
	}
	q.c.mu.Unlock()
	for _, m := range held {
		if err := m.Release(ctx); err != nil && !errors.Is(err, ErrFinished) && !errors.Is(err, ErrMessageLost) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
