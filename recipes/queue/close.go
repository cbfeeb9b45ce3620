package queue

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/closer"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// newCloser returns what Close ends: the calls in progress and the
// items taken not yet consumed or released.
func newCloser() *closer.Closer[*Item] {
	return closer.New(
		func(ctx context.Context, it *Item) error { return it.Release(ctx) },
		func(it *Item) time.Duration { return lockcore.CleanupTimeout(it.hold.Session) },
		func(err error) bool { return errors.Is(err, ErrFinished) || errors.Is(err, ErrItemLost) },
		ErrClosed,
	)
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
	return q.c.Close(ctx, func(err error) error { return q.errorf("close", err) })
}
