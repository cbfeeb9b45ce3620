package connection

import (
	"context"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/chanx"
)

// Session is one ZooKeeper session of a Client: an epoch. Every ephemeral
// node lives exactly as long as the session that created it, so a lock
// holds exactly as long as its session. When the session is lost the
// Client opens a new one, a new Session value; the old one stays ended.
type Session struct {
	id      int64
	timeout time.Duration
	history int

	done chan struct{} // closed when the session is lost

	mu        sync.Mutex
	period    context.Context         // of the current connected period; cancelled when it ends (policy) or the session does
	endPeriod context.CancelCauseFunc // cancels period, with why it ended
	resumed   chan struct{}           // closed when a new period begins, or the session ends; closed while trusted
	err       error                   // why it ended
}

func newSession(id int64, timeout time.Duration, history int) *Session {
	s := &Session{id: id, timeout: timeout, history: history, resumed: chanx.Closed, done: make(chan struct{})}
	s.period, s.endPeriod = context.WithCancelCause(context.Background())
	return s
}

// Trust waits until holds taken in the session can be trusted — it is not
// suspended under StandardPolicy — and returns the Untrusted channel of
// that period, open at the moment Trust returns. It fails with the
// session's error (wrapping ErrSessionLost) when the session ends, or with
// ctx's error.
//
// A recipe calls it right before it reports a hold, a lease or a term, so
// that it never reports one that is already untrusted.
func (s *Session) Trust(ctx context.Context) (<-chan struct{}, error) {
	period, err := s.Trusted(ctx)
	if err != nil {
		return nil, err
	}
	return period.Done(), nil
}

// Trusted is Trust with the period as a context: it is cancelled when
// Untrusted closes. A recipe ties a hold to it with context.AfterFunc, which
// costs no goroutine while the hold lasts. Its cause (context.Cause) says
// why the period ended, once: an error wrapping ErrSuspended when the
// connection was suspended under StandardPolicy (the session may live on),
// or the session's own error (Err) when the session ended first.
func (s *Session) Trusted(ctx context.Context) (context.Context, error) {
	for {
		s.mu.Lock()
		period, resumed, err := s.period, s.resumed, s.err
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if period.Err() == nil {
			return period, nil
		}
		select {
		case <-resumed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ID returns the session ID the server assigned; it is the
// ephemeralOwner of every ephemeral node the session creates.
func (s *Session) ID() int64 { return s.id }

// History numbers the databases the client's sessions were opened on: 0
// for the first session's, one more each time a new session finds the
// servers' database replaced — restored from an older backup, or emptied
// (ErrNewHistory). Two sessions of one history see one sequence of
// changes; across histories nothing read earlier can be compared with
// what the servers hold now. It is known before the session is reported:
// Session, WaitSession and the state Reconnected come after it.
func (s *Session) History() int { return s.history }

// Timeout returns the session timeout the server granted.
func (s *Session) Timeout() time.Duration { return s.timeout }

// Done is closed when the session is lost: the server expired it, the
// client was cut off for longer than the timeout (so the server may have
// expired it), or the client was closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Untrusted returns a channel that is closed when a hold taken now can no
// longer be trusted under the client's error policy: at the next Suspended
// under StandardPolicy, or when the session is lost under either policy.
//
// Take it when the hold begins. Under StandardPolicy a Suspended followed by
// Reconnected (the same session back) ends the trust in holds taken before
// it, not in holds taken after it: each connected period has its own
// channel. Called while suspended, or after the session ended, it returns a
// closed channel.
func (s *Session) Untrusted() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.period.Done()
}

// Err returns nil while the session lives, then why it ended; the error
// wraps ErrSessionLost (and ErrClosed after Close).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// distrust closes the current period's Untrusted channel (Suspended
// under StandardPolicy), with why as the period's cause.
func (s *Session) distrust(why error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.period.Err() == nil {
		s.endPeriod(why)
		s.resumed = make(chan struct{})
	}
}

// retrust starts a new connected period (Reconnected with the same
// session) whose holds are trusted until the next distrust.
func (s *Session) retrust() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if s.period.Err() != nil {
		s.period, s.endPeriod = context.WithCancelCause(context.Background())
		closeOnce(s.resumed)
	}
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// end records why the session ended and closes Untrusted and Done once;
// a period still trusted ends with err as its cause. It reports whether
// this call ended it.
func (s *Session) end(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	s.err = err
	s.endPeriod(err)
	closeOnce(s.resumed)
	close(s.done)
	return true
}
