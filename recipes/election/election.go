package election

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Errors of the election. Match them with errors.Is.
var (
	// ErrNoLeader is returned by Leader when no candidate leads.
	ErrNoLeader = errors.New("election: no leader")
	// ErrLeading is returned by Campaign while this Election's term is
	// still live: one Election is one candidate, with one node.
	ErrLeading = errors.New("election: already leading")
	// ErrTermLost is the cause of a term's Context (its Err) when the term
	// could no longer be trusted, and what Resign returns then. The cause
	// also wraps what happened: connection.ErrSuspended,
	// connection.ErrSessionLost or connection.ErrNodeDeleted (see
	// Term.Err).
	ErrTermLost = errors.New("election: term lost")
	// ErrResigned is the cause of a term's Context (its Err) after Resign,
	// and what a second Resign returns.
	ErrResigned = errors.New("election: resigned")
	// ErrInvalidID means a candidate id is empty or not UTF-8.
	ErrInvalidID = errors.New("election: invalid candidate id")
	// ErrClosed is returned by every method of an Election after Close
	// (Observe's channel is closed instead), and by a Campaign or Run
	// that Close ended.
	ErrClosed = errors.New("election: closed")
)

// Layout names: Curator's LeaderLatch and LeaderSelector.
const (
	latchName    = "latch-"
	selectorName = "lock-"
)

// Election is one candidate of the election at a path. Its methods are
// safe for concurrent use; it has at most one node, and one term at a time.
type Election struct {
	client *connection.Client
	path   string
	id     string
	core   lockcore.Lock

	gate chan struct{} // one Campaign at a time; Close keeps it

	// closing is cancelled by Close: it ends a Campaign in progress and
	// every observer.
	closing     context.Context
	stopClosing context.CancelFunc
	observers   sync.WaitGroup

	priority   int            // WithPriority
	preempt    bool           // WithPreemption
	hysteresis time.Duration  // WithPreemption's
	lines      sync.WaitGroup // watchLine's goroutines

	mu     sync.Mutex
	term   *Term
	closed bool
}

// Option configures an Election.
type Option func(*Election) error

// WithSelectorLayout makes the candidate take part in the election of
// Curator's LeaderSelector on the path — an InterProcessMutex whose
// "<prefix>lock-<seq>" nodes hold the ids — instead of a LeaderLatch's.
// The two layouts are two different elections: every candidate on a path
// must use the same one. Kazoo's Election does not see these nodes (it
// would need extra_lock_patterns): do not mix it in.
func WithSelectorLayout() Option {
	return func(e *Election) error {
		e.core.Name = selectorName
		e.core.Accept = layout.MutexKinds
		return nil
	}
}

// New returns a candidate of the election at path, with id as its
// identity: the data of its node, which Leader and Participants (and
// Curator's getLeader) report. Nothing is created until Campaign.
func New(c *connection.Client, path string, id string, opts ...Option) (*Election, error) {
	if c == nil {
		return nil, errtext.Errorf("election: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, errtext.Errorf("election: %w", err)
	}
	if path == "/" {
		return nil, errtext.Errorf("election: %w: the root cannot be an election", connection.ErrInvalidPath)
	}
	if id == "" || !utf8.ValidString(id) {
		return nil, errtext.Errorf("%w: %q", ErrInvalidID, id)
	}
	e := &Election{
		client: c,
		path:   path,
		id:     id,
		gate:   make(chan struct{}, 1),
		core: lockcore.Lock{
			Client:    c,
			Dir:       path,
			Name:      latchName,
			Data:      []byte(id),
			Accept:    isLatch,
			Predicate: lockcore.Exclusive,
			Window:    2,
			Recipe:    "election",
		},
	}
	for _, o := range opts {
		if o == nil {
			return nil, errtext.Errorf("election: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(e); err != nil {
			return nil, err
		}
	}
	if e.priority > 0 {
		e.core.Name = priorityMark + strconv.Itoa(e.priority) + "-" + e.core.Name
	}
	e.closing, e.stopClosing = context.WithCancel(context.Background())
	return e, nil
}

func isLatch(k layout.Kind) bool { return k == layout.Latch }

// Path returns the election's path.
func (e *Election) Path() string { return e.path }

// ID returns this candidate's id.
func (e *Election) ID() string { return e.id }

// Campaign blocks until this candidate leads, and returns its term; or
// until ctx is done, when its node is deleted and the error wraps
// ctx.Err(). If the session is lost while it waits, it campaigns again in
// the next session. It returns an error matching ErrLeading while a term
// of this Election is live (Done not closed). It never returns a term whose
// Done is already closed.
//
// Close ends a Campaign in progress: it returns an error matching
// ErrClosed, and its node is deleted as for a cancelled ctx.
func (e *Election) Campaign(ctx context.Context) (*Term, error) {
	if e.isClosed() {
		return nil, e.errorf("campaign", ErrClosed)
	}
	select {
	case e.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, e.errorf("campaign", ctx.Err())
	case <-e.closing.Done():
		return nil, e.errorf("campaign", ErrClosed)
	}
	defer func() { <-e.gate }()
	// Close cancels the campaign as the caller's ctx would.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.closing, cancel)
	defer stop()
	e.mu.Lock()
	cur := e.term
	e.mu.Unlock()
	if cur != nil {
		if !cur.hold.Lost() {
			return nil, e.errorf("campaign", ErrLeading)
		}
		cur.end() // lost: its watcher ends it; make sure before a new node
	}
	for {
		a, err := e.core.Acquire(actx, true)
		if err != nil {
			if ctx.Err() == nil && e.closing.Err() != nil {
				err = ErrClosed
			}
			return nil, e.errorf("campaign", err)
		}
		if e.preempt {
			higher, err := e.higherWaits(actx, a.Path)
			if higher || (err != nil && actx.Err() != nil) {
				// Back of the line (or out of it): no term is handed out,
				// nor told to the client's observer.
				e.stepBack(a)
				if !higher {
					if ctx.Err() == nil && e.closing.Err() != nil {
						return nil, e.errorf("campaign", ErrClosed)
					}
					return nil, e.errorf("campaign", actx.Err())
				}
				continue
			}
			// Any other failure to list leaves the term to watchLine,
			// which lists again.
		}
		t := e.newTerm(ctx, a)
		if t.hold.Lost() {
			// The connected period Acquire confirmed ended in between.
			t.end()
			if err := ctx.Err(); err != nil {
				return nil, e.errorf("campaign", err)
			}
			if e.closing.Err() != nil {
				return nil, e.errorf("campaign", ErrClosed)
			}
			continue
		}
		e.mu.Lock()
		if e.closed {
			// Close came after the node was made: it did not see this
			// term, so the term is resigned here, its node deleted.
			e.mu.Unlock()
			rctx, rcancel := context.WithTimeout(context.Background(), resignTimeout(t))
			_ = t.Resign(rctx)
			rcancel()
			return nil, e.errorf("campaign", ErrClosed)
		}
		e.term = t
		if e.preempt {
			e.lines.Add(1)
			go func() {
				defer e.lines.Done()
				e.watchLine(t)
			}()
		}
		e.mu.Unlock()
		return t, nil
	}
}

func (e *Election) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// Close ends the candidate for good: a Campaign in progress returns
// ErrClosed (its node deleted), the live term is resigned — it ends (Done
// closes, with ErrResigned) before its node's delete is sent — and every
// channel of Observe is closed. Close waits for a Campaign in progress to
// return, for the delete's answer and for the observers' goroutines, as
// long as ctx allows; if ctx ends first the error wraps ctx's, and a node
// not yet deleted is deleted in the background while its session lives.
// The error is the resignation's (see Term.Resign), nil when no term was
// live. Every method returns ErrClosed afterwards. Close is idempotent.
func (e *Election) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	t := e.term
	e.mu.Unlock()
	e.stopClosing()
	var errs []error
	if t != nil {
		err := t.Resign(ctx)
		if err != nil && !errors.Is(err, ErrResigned) && !errors.Is(err, ErrTermLost) {
			errs = append(errs, err) // an ended term is no failure of Close
		}
	}
	select {
	case e.gate <- struct{}{}: // no Campaign runs, nor will: Close keeps the gate
	case <-ctx.Done():
		errs = append(errs, e.errorf("close", ctx.Err()))
	}
	e.observers.Wait() // they end at once with e.closing
	e.lines.Wait()     // they end with their terms, resigned above
	return errors.Join(errs...)
}

func (e *Election) errorf(op string, err error) error {
	return errtext.Errorf("election: %s %s: %w", op, e.path, err)
}
