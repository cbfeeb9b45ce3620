package retry

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// Operation is one attempt of a retried operation.
type Operation func(ctx context.Context) error

// Notify is called after a failed attempt that will be retried, with its
// error and the sleep before the next attempt.
type Notify func(err error, next time.Duration)

// Do runs op until it succeeds, fails with an error that is not Retryable
// (or is marked Permanent), the policy gives up, or ctx is done. It returns
// nil or the last error; when ctx ends the wait, the error wraps ctx.Err()
// and the last error of op too.
func Do(ctx context.Context, p Policy, op Operation) error {
	return DoNotify(ctx, p, op, nil)
}

// DoNotify is Do with a callback before each retry, for logging.
func DoNotify(ctx context.Context, p Policy, op Operation, notify Notify) error {
	return do(ctx, p, op, notify, nil)
}

// do takes a timer so that tests can drive the sleeps without sleeping.
//
// The first attempt runs before any retry state is made: most operations
// succeed, or fail for good, the first time, and then cost nothing more.
func do(ctx context.Context, p Policy, op Operation, notify Notify, timer backoff.Timer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	first := op(ctx)
	if final, err := settled(first); final {
		return err
	}
	last := first
	attempt := func() error {
		if first != nil {
			err := first // already run: the policy decides when to run it again
			first = nil
			return err
		}
		if err := ctx.Err(); err != nil {
			return backoff.Permanent(err)
		}
		err := op(ctx)
		if err == nil {
			return nil
		}
		last = err
		if final, _ := settled(err); final {
			return backoff.Permanent(err)
		}
		return err
	}
	var n backoff.Notify
	if notify != nil {
		n = backoff.Notify(notify)
	}
	b := backoff.WithContext(p.Clone(), ctx)
	var err error
	if timer != nil {
		err = backoff.RetryNotifyWithTimer(attempt, b, n, timer)
	} else {
		err = backoff.RetryNotify(attempt, b, n)
	}
	if err == nil {
		return nil
	}
	var perm *backoff.PermanentError
	if errors.As(err, &perm) {
		err = perm.Err
	}
	// backoff returns ctx.Err() alone when the context ends a sleep; keep
	// the operation's last error beside it.
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) && last != nil && !errors.Is(last, ctxErr) {
		return errors.Join(ctxErr, last)
	}
	return err
}

// settled says whether an attempt's error ends the operation, and the
// error to return then: nil, a Permanent error's cause, or an error that is
// not Retryable.
func settled(err error) (final bool, result error) {
	if err == nil {
		return true, nil
	}
	var perm *backoff.PermanentError
	if errors.As(err, &perm) {
		return true, perm.Err
	}
	return !Retryable(err), err
}

// Permanent marks err as not to be retried, whatever it wraps. errors.Is and
// errors.As see through the mark.
func Permanent(err error) error { return backoff.Permanent(err) }

// Again marks err as worth retrying, whatever it wraps: for a caller that
// knows better than Retryable, such as an operation safe in any session
// whose session ended under it. errors.Is and errors.As see through it.
func Again(err error) error { return &againError{err} }

type againError struct{ err error }

func (e *againError) Error() string { return e.err.Error() }
func (e *againError) Unwrap() error { return e.err }

// Retryable reports whether err is worth retrying in the same session: the
// connection was lost or closed while the request was in flight, no server
// could be reached, the session moved to another server, or the server
// timed out the operation. Session expiry is not retryable: the session
// that owned ephemeral nodes and watches is gone.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var again *againError
	switch {
	case errors.As(err, &again):
		return true
	case errors.Is(err, zk.ErrConnectionClosed),
		errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrSessionMoved):
		return true
	case errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrClosing),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	// go-zookeeper has no sentinel for these server codes: it reports them
	// as "unknown error: <code>".
	msg := err.Error()
	if strings.HasSuffix(msg, "unknown error: -4") || // connection loss
		strings.HasSuffix(msg, "unknown error: -7") { // operation timeout
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
