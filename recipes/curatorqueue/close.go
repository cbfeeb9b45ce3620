package curatorqueue

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/closer"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// newCloser returns what Close ends: the calls in progress and the
// messages held under the lock path not yet consumed or released.
func newCloser() *closer.Closer[*Message] {
	return closer.New(
		func(ctx context.Context, m *Message) error { return m.Release(ctx) },
		func(m *Message) time.Duration { return lockcore.CleanupTimeout(m.hold.Session) },
		func(err error) bool { return errors.Is(err, ErrFinished) || errors.Is(err, ErrMessageLost) },
		ErrClosed,
	)
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
	return q.c.Close(ctx, func(err error) error { return q.errorf("close", err) })
}
