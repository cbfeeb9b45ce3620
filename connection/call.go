package connection

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
	"github.com/zkrecipes/zkrecipes/retry"
)

// How an operation runs: in which sessions (scope, Pin), under the retry
// policy, with a context go-zookeeper's calls do not take (value,
// valueThen), and what its error says when no answer came.

// errUnimplemented is how go-zookeeper reports the server's
// "unimplemented" code, such as a container create on a 3.4 server.
const errUnimplemented = "unknown error: -6"

// scope says in which sessions an operation may run.
type scope int

const (
	// inSession: only in the session of its first attempt. A retry after a
	// lost connection goes to the same session (the same go-zookeeper
	// handle, which never opens another one); once that session has ended
	// the operation fails with ErrSessionLost and is never re-sent. A
	// delete or set on a fixed path re-run in a later session could act on
	// another client's node.
	inSession scope = iota
	// anySession: safe in any session (a read, an idempotent create of
	// persistent nodes); a retry follows the client into its next session.
	anySession
)

type pinKey struct{}

// Pin returns a context under which the client's writes run in s only. A
// write (Create, Set, Delete, Multi...) made with it whose first attempt
// would go to another session fails with an error wrapping ErrSessionLost
// and sends nothing; its retries stay in s, as every write's do. Reads
// ignore the pin. A recipe pins the release of a node that only its
// session may touch (a queue item's taken marker, say): without the pin a
// write begun just after the session changed would run in the next one.
func pinSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, pinKey{}, s)
}

func pinned(ctx context.Context) *Session {
	s, _ := ctx.Value(pinKey{}).(*Session)
	return s
}

// call runs op under the retry policy, waiting for a session when there is
// none. With inSession, every attempt runs on the handle and session of
// the first. Errors are wrapped with what and path.
func (c *Client) call(ctx context.Context, what, path string, sc scope, op func(ctx context.Context, zc *zk.Conn) error) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	var (
		zc      *zk.Conn
		sess    *Session
		unknown bool // an attempt was sent and not answered
		tries   int
	)
	err := retry.DoNotify(ctx, c.opts.policy, func(ctx context.Context) error {
		tries++
		ctx = c.withAttempt(ctx, tries)
		if sess == nil || sc == anySession {
			var err error
			if zc, sess, err = c.current(ctx); err != nil {
				return retry.Permanent(err)
			}
			if p := pinned(ctx); p != nil && sc == inSession && p != sess {
				if err := c.sessionErr(p, nil); err != nil {
					return retry.Permanent(err)
				}
				return retry.Permanent(errtext.Errorf("%w: pinned session %#x is not the current one", ErrSessionLost, p.ID()))
			}
		} else if err := c.sessionErr(sess, nil); err != nil {
			return retry.Permanent(err)
		}
		err := c.ensureNamespace(ctx, zc)
		if err == nil {
			err = op(ctx, zc)
			unknown = unknown || !isAnswered(err) && (noAnswer(err) || isUnanswered(err))
		}
		if noAnswer(err) && c.takeTooLarge(wire.TooLargeKey(what, c.server(path))) {
			// The answer came and was too long for the client's buffer;
			// asking again would only drop the next connection too.
			return retry.Permanent(errtext.Errorf("%w (%d bytes): %w", ErrResponseTooLarge, c.opts.maxBufferSize, err))
		}
		if sc == anySession && noAnswer(err) && sess.Err() != nil && !errors.Is(sess.Err(), ErrClosed) {
			// Its session ended under it: try again in the next one.
			return retry.Again(err)
		}
		return c.opErr(sess, err)
	}, func(err error, next time.Duration) {
		c.opts.logger.Debug("connection: request retried", "op", what, "path", path, "error", err, "after", next)
	})
	if err != nil && sc == inSession && unknown {
		// A write sent and not answered may have been applied: never
		// report it as not done.
		return errtext.Errorf("connection: %s %s: %w: %w", what, path, ErrOutcomeUnknown, err)
	}
	if err != nil {
		return errtext.Errorf("connection: %s %s: %w", what, path, err)
	}
	return nil
}

// unansweredError is the error of a request whose caller stopped waiting
// for it (its context ended) after it was handed to go-zookeeper: it may
// have been sent, and applied. It unwraps to the context's error.
type unansweredError struct{ err error }

func (e unansweredError) Error() string { return e.err.Error() }

func (e unansweredError) Unwrap() error { return e.err }

// answeredError marks the error of an attempt that left no write
// unanswered: what it wrote was answered, or it wrote nothing that
// changes the tree (a read lost with its connection, a request refused
// before it was written). The call retries it as the error it wraps says,
// and never reports ErrOutcomeUnknown for it.
type answeredError struct{ err error }

func (e answeredError) Error() string { return e.err.Error() }

func (e answeredError) Unwrap() error { return e.err }

func isAnswered(err error) bool {
	if err == nil {
		return false
	}
	var a answeredError
	return errors.As(err, &a)
}

func isUnanswered(err error) bool {
	if err == nil {
		return false // the common case, without errors.As's allocation
	}
	var u unansweredError
	return errors.As(err, &u)
}

// noteTooLarge records that the reply to a request (tooLargeKey: its kind
// and server path) exceeded the client's buffer.
func (c *Client) noteTooLarge(key string) { c.tooLarge.Store(key, time.Now()) }

// takeTooLarge reports, once, whether a reply to a request of key
// exceeded the client's buffer just now (the request fails as soon as the
// connection drops; an older note is of a request that gave up). The
// other requests the drop fails, a read of the same node's data among
// them, are retried.
func (c *Client) takeTooLarge(key string) bool {
	if c.opts.maxBufferSize == 0 {
		return false
	}
	at, ok := c.tooLarge.LoadAndDelete(key)
	return ok && time.Since(at.(time.Time)) < 10*time.Second
}

// opErr maps the error of an attempt made in sess: once sess has ended,
// any failure is final and says the session was lost.
func (c *Client) opErr(sess *Session, err error) error {
	if err == nil {
		return nil
	}
	if noAnswer(err) {
		if serr := c.sessionErr(sess, err); serr != nil {
			return retry.Permanent(serr)
		}
	}
	return c.mapErr(err)
}

// noAnswer reports whether err says the server's answer never came (as
// opposed to an answer such as NoNode).
func noAnswer(err error) bool {
	return retry.Retryable(err) || errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionExpired)
}

// sessionErr returns nil while sess lives, and otherwise an error that
// wraps ErrSessionLost (ErrClosed after Close) and cause, if any.
func (c *Client) sessionErr(sess *Session, cause error) error {
	serr := sess.Err()
	if serr == nil {
		return nil
	}
	if errors.Is(serr, ErrClosed) {
		return ErrClosed
	}
	if cause == nil || errors.Is(cause, ErrSessionLost) {
		return serr
	}
	return errtext.Errorf("%w (%w)", serr, cause)
}

// run runs f, returning early with ctx's error when ctx ends first.
// go-zookeeper calls take no context; an abandoned call finishes in the
// background when its answer comes or its handle closes (Close waits).
// f must not write anything its caller reads: results travel with value.
func (c *Client) run(ctx context.Context, f func() error) error {
	_, err := value(c, ctx, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// value is run for a call with a result: the result travels back with the
// error, so an abandoned call never writes to a variable its caller may
// still read.
func value[T any](c *Client, ctx context.Context, f func() (T, error)) (T, error) {
	return valueThen(c, ctx, f, nil)
}

// inFlight runs f counted among the calls in flight (Client.calls) unless
// the client is closed, when its handle answers f at once.
func inFlight[T any](c *Client, f func() (T, error)) (T, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return f()
	}
	c.calls.Add(1)
	c.mu.Unlock()
	defer c.calls.Done()
	return f()
}

// valueThen is value that, when ctx ends before f returns, calls abandoned
// with f's result once f has returned, in the goroutine that ran f. It is
// how a caller that gives up cleans up after a request whose effect it
// cannot know yet: only after f returned has the request been answered or
// its connection closed.
func valueThen[T any](c *Client, ctx context.Context, f func() (T, error), abandoned func(T, error)) (T, error) {
	var zero T
	if ctx.Done() == nil {
		return inFlight(c, f)
	}
	if ctx.Value(inlineKey{}) != nil {
		// A goroutine of the client's own, that nothing waits for but its
		// callback (childrenThen): it waits for the answer itself.
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		return inFlight(c, f)
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return zero, ErrClosed
	}
	c.wg.Add(1)
	c.calls.Add(1)
	c.mu.Unlock()
	type result struct {
		v   T
		err error
	}
	var (
		mu   sync.Mutex
		gone bool // the caller left
	)
	done := make(chan result, 1)
	go func() {
		defer c.wg.Done()
		v, err := f()
		c.calls.Done()
		mu.Lock()
		if !gone {
			done <- result{v, err} // buffered; sent under mu, so the caller either takes it or has left
			mu.Unlock()
			return
		}
		mu.Unlock()
		if abandoned != nil {
			abandoned(v, err)
		}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		select {
		case r := <-done: // f finished meanwhile: its result counts
			return r.v, r.err
		default:
		}
		gone = true
		return zero, unansweredError{ctx.Err()}
	}
}

// mapErr turns go-zookeeper's errors about the session into the client's.
func (c *Client) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrSessionExpired):
		return errtext.Errorf("%w: %w", ErrSessionLost, err)
	case errors.Is(err, zk.ErrClosing):
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return ErrClosed
		}
		// The handle was replaced after a local expiry.
		return errtext.Errorf("%w: %w", ErrSessionLost, err)
	}
	return err
}
