package election

import (
	"context"
	"errors"
	"path"
	"sync"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
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
		e.core.Accept = lockcore.MutexKinds
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
	e.closing, e.stopClosing = context.WithCancel(context.Background())
	return e, nil
}

func isLatch(k lockcore.Kind) bool { return k == lockcore.Latch }

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
	return errors.Join(errs...)
}

func (e *Election) errorf(op string, err error) error {
	return errtext.Errorf("election: %s %s: %w", op, e.path, err)
}

// Term is one period of leadership of one candidate.
type Term struct {
	e    *Election
	hold *lockcore.Hold

	mu    sync.Mutex
	ended bool // Resign was called, or the term was ended after its loss
}

// newTerm starts a term. When it is lost its node is deleted in the
// background while its session lives (lockcore.Hold), so that the election
// goes on: under the standard policy a suspended session that comes back
// would otherwise keep the lowest node and leave the election with no
// trusted leader (Curator's LeaderLatch resets on RECONNECTED for the same
// reason).
func (e *Election) newTerm(ctx context.Context, a lockcore.Acquired) *Term {
	return &Term{e: e, hold: lockcore.NewHold(e.client, a, lockcore.HoldConfig{Lost: ErrTermLost, Released: ErrResigned,
		Recipe: "election", Path: e.path, Ctx: ctx})}
}

// end ends a lost term (it does nothing to a term that ended before); it
// sends nothing.
func (t *Term) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		t.ended = true
		_ = t.hold.End(context.Background(), nil)
	}
}

// Done is closed when leadership can no longer be trusted under the
// connection's error policy, or after Resign.
func (t *Term) Done() <-chan struct{} { return t.hold.Done() }

// Context is the term's: cancelled when Done closes, with Err as its
// cause.
func (t *Term) Context() context.Context { return t.hold.Context() }

// Err returns nil while the term lasts, and then why it ended, as
// Context's cause does: ErrResigned after Resign, or ErrTermLost wrapping
// what happened first —
//   - connection.ErrSuspended: the connection was suspended under
//     connection.StandardPolicy; the session may live on, but another
//     candidate may lead soon;
//   - connection.ErrSessionLost: the session ended (expired, cut off for
//     its timeout, or the client closed: connection.ErrClosed too);
//   - connection.ErrNodeDeleted: another client deleted the term's node.
func (t *Term) Err() error { return t.hold.Cause() }

// Token is the term's fencing token: the czxid of its node, strictly
// increasing across successive leaders of the election.
func (t *Term) Token() int64 { return t.hold.Token }

// Guard returns a guard of the term for connection.Client.Multi: the
// transaction commits only while the term lasts — its node still there,
// in its session, and the term not resigned or lost — all or nothing. A
// leader that keeps its state in ZooKeeper writes it so, and a deposed
// leader's write, however late, never lands:
//
//	_, err := client.Multi(ctx, term.Guard(), &zk.SetDataRequest{Path: "/app/state", Data: s, Version: -1})
//
// A term that ended makes Multi fail with connection.ErrGuardFailed (and
// ErrTermLost or ErrResigned), nothing applied.
func (t *Term) Guard() *connection.Guard { return t.hold.Guard() }

// Node is the path of the term's node.
func (t *Term) Node() string { return t.hold.Path }

// Resign ends the term and then deletes its node, so that the next
// candidate leads. The term is over before the delete is sent — Done is
// closed, whatever the answer — so no other candidate can lead while its
// Done is open. It returns an error matching ErrTermLost when the term was
// lost before (its node went with its session, or is being deleted), and
// ErrResigned when it was resigned before. If the delete's answer never
// came (ctx ended first, or the connection was lost), the error wraps
// connection.ErrOutcomeUnknown and the node is deleted in the background
// while its session lives.
func (t *Term) Resign(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		if errors.Is(t.hold.Cause(), ErrResigned) {
			return t.e.errorf("resign", ErrResigned)
		}
		return t.e.errorf("resign", t.hold.Cause())
	}
	t.ended = true
	if err := t.hold.End(ctx, t.e.core.Release); err != nil {
		return t.e.errorf("resign", err)
	}
	return nil
}

// Participant is one candidate as ZooKeeper shows it. Observe delivers
// the leader as one, and the zero Participant while there is none.
type Participant struct {
	ID      string // its id (the node's data)
	Leader  bool   // whether it leads: the first in line
	Node    string // its node
	Session int64  // the owning session
	Token   int64  // its node's czxid: its fencing token once it leads
}

// Participants lists the candidates in line order, the leader first —
// Go and Curator candidates alike.
func (e *Election) Participants(ctx context.Context) ([]Participant, error) {
	if e.isClosed() {
		return nil, e.errorf("participants", ErrClosed)
	}
	ps, err := lockcore.Participants(ctx, e.client, e.path, e.core.Accept)
	if err != nil {
		return nil, e.errorf("participants", err)
	}
	out := make([]Participant, len(ps))
	for i, p := range ps {
		out[i] = Participant{ID: string(p.Data), Leader: i == 0, Node: p.Path, Session: p.Session, Token: p.Token}
	}
	return out, nil
}

// Leader returns the id of the current leader, as the ensemble sees it
// now, or an error matching ErrNoLeader when no candidate is in line. The
// id may be empty: Curator's LeaderLatch leads with "" unless given an id,
// and that is a leader all the same.
func (e *Election) Leader(ctx context.Context) (string, error) {
	if e.isClosed() {
		return "", e.errorf("leader", ErrClosed)
	}
	l, _, err := e.look(ctx, false)
	if err != nil {
		return "", e.errorf("leader", err)
	}
	if !l.Leader {
		return "", e.errorf("leader", ErrNoLeader)
	}
	return l.ID, nil
}

// look reads the leader (the zero Participant for none) and, when watch is
// set, a channel that is closed when the leader may have changed: a data
// watch on the leader's node (it fires when the leader leaves, and only
// then: no other candidate's coming or going wakes an observer), a child
// watch on the directory while it has no candidate, or a creation watch
// while there is no directory. All three are the client's shared watches:
// a look whose caller gives up leaves no goroutine and adds no watch.
func (e *Election) look(ctx context.Context, watch bool) (Participant, <-chan struct{}, error) {
	for {
		children, _, err := e.client.Children(ctx, e.path)
		var changed <-chan struct{}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if !watch {
				return Participant{}, nil, nil
			}
			ok, _, w, err := e.client.ExistsWatch(ctx, e.path)
			if err != nil {
				return Participant{}, nil, err
			}
			if ok {
				continue // created in between
			}
			return Participant{}, w.Done(), nil
		case err != nil:
			return Participant{}, nil, err
		}
		cs := lockcore.Sort(children, e.core.Accept)
		if len(cs) == 0 && watch {
			var w *connection.Watch
			children, _, w, err = e.client.ChildrenWatch(ctx, e.path)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return Participant{}, nil, err
			}
			changed = w.Done()
			cs = lockcore.Sort(children, e.core.Accept)
		}
		if len(cs) == 0 {
			return Participant{}, changed, nil
		}
		first := path.Join(e.path, cs[0].Name)
		var (
			data []byte
			stat *zk.Stat
			w    *connection.Watch
		)
		if watch {
			data, stat, w, err = e.client.GetWatch(ctx, first)
		} else {
			data, stat, err = e.client.Get(ctx, first)
		}
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return Participant{}, nil, err
		}
		l := Participant{ID: string(data), Leader: true, Node: first, Session: stat.EphemeralOwner, Token: stat.Czxid}
		if w != nil {
			changed = w.Done()
		}
		return l, changed, nil
	}
}
