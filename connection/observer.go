package connection

import (
	"context"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Observer is told what a Client and the recipes built on it do: every
// request, watch notification and state change, its close, the waits
// and holds of the lock recipes, the caches' trust and the shared
// counters' lost answers. It is the hook metrics, tracing and logging
// adapters are written on; give one to Open with WithObserver.
//
// Every field is optional: a nil field, or no observer, costs a nil check
// and no allocation. Like net/http/httptrace.ClientTrace, Observer is a
// struct of functions so that later releases can add fields (events of
// more recipes among them) without breaking existing code: set fields by
// name.
//
// The contract of every function:
//
//   - It is called synchronously, on the goroutine that did the work (a
//     caller's, or one of the client's own, go-zookeeper's receive loop
//     among them), sometimes with the client's locks held. It must return
//     quickly, must not block, and must not call the Client or a recipe
//     value; hand anything slow to a goroutine of its own.
//   - A function that begins something (Request, Wait, Hold) may return
//     a function to be told of its end; nil means "not interested". The
//     returned function is called exactly once, possibly on another
//     goroutine than the beginning; concurrent beginnings are told apart
//     by their own returned functions.
//   - ctx is the caller's context (for Request, a context derived from
//     the caller's; for a background cleanup, the client's own), so that
//     values such as a trace span reach the observer. It is for reading
//     values only: its cancellation is the caller's business.
type Observer struct {
	// Request is told of every request the client sends to ZooKeeper, as
	// it is handed to the connection — each attempt of a retried
	// operation, the requests an operation needs on the way (a missing
	// parent's create, a sync before a read), those of the client's
	// background cleanups and its credentials. The requests go-zookeeper
	// and the wire client send of their own accord on a connection
	// (pings, the watches and credentials sent again after a reconnect)
	// are not told. The function it returns, if not nil, is called once
	// with the outcome: the answer, or why none came.
	Request func(ctx context.Context, r Request) func(RequestDone)
	// Notification is told of every watch notification the server sends
	// (a node created, deleted, its data or children changed), once,
	// whatever number of watches of the client it fires.
	Notification func(n Notification)
	// StateChange is told of every state change, in order, as Listen
	// delivers them.
	StateChange func(s StateChange)
	// Wait is told when a recipe's call first has to wait: a lock's
	// contender that made its node and found others before it (a TryLock
	// that would wait is not told), a semaphore's acquirer for a lease, a
	// queue's worker for an item, a barrier's member. The wait lasts until
	// the call that waits returns, through any new node it makes after
	// its session was lost.
	// The context it returns, if not nil, must be ctx or derived from it:
	// the wait's requests are made with it, so that their Request events
	// see its values (a span per wait, with the requests under it). The
	// function it returns, if not nil, is called once when the wait ends:
	// turn taken, or the error the waiting call returns. Told by mutex,
	// naive, rwlock, semaphore (and its acquire mutex, at
	// "<semaphore>/locks"), election, queue, barrier and doublebarrier;
	// docs/observability.md says what each reports.
	Wait func(ctx context.Context, w Wait) (context.Context, func(WaitDone))
	// Hold is told when a recipe's hold begins (a lock, a read or write
	// lock, a semaphore's lease, a leader's term, a queue item taken, an
	// item of a partition's share), with the context of the call that
	// took it; the function it returns, if not nil, is called once when
	// the hold ends — before its release is sent, right before its Done
	// closes. Told by mutex, naive, rwlock, semaphore, election, queue and
	// partition.
	Hold func(ctx context.Context, h Hold) func(HoldDone)
	// View is told when a view begins to be trusted and when that trust
	// ends, in order, once each: a cache (recipes/cache, and the views
	// built on one: a group's members, a discovery cache, a shared value's
	// watcher), and a kept node's presence (node's Node and TTLNode, a
	// discovery Registration, a group member's own node).
	View func(v ViewChange)
	// Closed is told once, when Close has ended the client: its session
	// closed, its goroutines stopped. No state change follows it; a
	// client's end is not one (Listen reports none), so an adapter that
	// shows a client's state clears it here.
	Closed func(c ClientClosed)
	// CounterOutcome is told when a shared counter (recipes/shared) has
	// sent a write whose answer was lost — it may have applied — and
	// either settled it (its marker's read proved whether it applied) or
	// had to leave it unknown (the operation's error then wraps
	// ErrOutcomeUnknown). The requests show the lost answer
	// (zk.ErrConnectionClosed) and the read after it; only the counter
	// knows what the read proved. Told once per lost answer, with the
	// context of the counter's operation.
	CounterOutcome func(ctx context.Context, o CounterOutcome)
}

// WithObserver has the client tell o of its requests, notifications and
// state changes, and the recipes built on the client tell o of their
// waits and holds (see Observer). The client keeps a copy of *o: a later
// change to o has no effect. A nil o is refused with ErrInvalidOption.
func WithObserver(o *Observer) Option {
	return func(opts *options) error {
		if o == nil {
			return invalid("nil observer")
		}
		cp := *o
		opts.observer = &cp
		return nil
	}
}

// Request is a request sent to ZooKeeper.
type Request struct {
	// Op is ZooKeeper's name of the operation: "create", "create2",
	// "createContainer", "createTTL", "delete", "exists", "getData",
	// "setData", "getChildren2", "sync", "multi", "multiRead",
	// "setWatches", "auth".
	Op string
	// Path is the node's path on the server, the namespace included; ""
	// for a request of many paths (multi, multiRead, setWatches).
	Path string
	// Watch says whether the request sets a watch (a setWatches sets
	// them all).
	Watch bool
	// SessionID is the session of the connection handle the request is
	// sent on; 0 if the handle has none yet.
	SessionID int64
	// Attempt counts the attempts of the operation the request belongs
	// to, from 1; a retried operation sends its requests again with the
	// next number.
	Attempt int
	// Bytes is the request's length on the wire, length prefix
	// included, for the requests the client encodes itself (create2 and
	// getChildren2 answered through a callback, multiRead, setWatches,
	// the history sync); 0 where go-zookeeper encodes it and the client
	// does not know it.
	Bytes int
}

// RequestDone is the outcome of a Request.
type RequestDone struct {
	// Err is the request's own outcome, known when its answer comes or
	// its connection fails, even if its caller stopped waiting before:
	// nil when the server answered with success; otherwise the server's
	// error (zk.ErrNoNode, zk.ErrNodeExists...) or why no answer came
	// (zk.ErrConnectionClosed when the connection was lost with the
	// request unanswered: it may have applied; zk.ErrClosing when the
	// handle ended first), or, for a request the wire client did not
	// take, its refusal. The caller's own error is the operation's, which
	// may wrap it.
	Err error
	// Duration is the time from handing the request to the connection
	// (a request queued while the connection is down waits there) to its
	// outcome.
	Duration time.Duration
	// Bytes is the answer's length on the wire, length prefix and header
	// included, where Request.Bytes is known and an answer came; 0
	// otherwise.
	Bytes int
}

// Notification is a watch notification from the server.
type Notification struct {
	// Type is what happened to the node: zk.EventNodeCreated,
	// EventNodeDeleted, EventNodeDataChanged or EventNodeChildrenChanged.
	Type zk.EventType
	// Path is the node's path on the server, the namespace included.
	Path string
	// SessionID is the session of the connection it came on.
	SessionID int64
	// SinceWatch is the time since the oldest of the client's watches it
	// fires was set: since the read that set it (GetWatch, ChildrenWatch,
	// ExistsWatch, and the recipes' reads through them) was sent, through
	// any reconnection that set it again. It is 0 where the client keeps
	// no time: for the watches a cache sets with its bulk reads and
	// keeps in its own table, and for a notification that fires no
	// watch the client still has.
	SinceWatch time.Duration
}

// StateChange is a change of the client's state.
type StateChange struct {
	State State
	// SessionID is the session the change is about: the one suspended,
	// resumed, lost or established.
	SessionID int64
	// Cause says why, for Suspended and Lost: an error wrapping
	// ErrSuspended (the connection was lost, or the server was silent)
	// or ErrSessionLost (expired by the server, or silent for the
	// session timeout); nil for Connected and Reconnected.
	Cause error
}

// Wait is a recipe's wait: a contender's for its turn, a worker's for an
// item, a member's for a barrier.
type Wait struct {
	// Recipe names the recipe: "mutex", "naive", "rwlock", "semaphore",
	// "election", "queue", "barrier", "doublebarrier", or another
	// recipe's name.
	Recipe string
	// Path is the recipe's path as the caller gave it (without the
	// namespace).
	Path string
	// Participant is the path of the contender's own node when the wait
	// began.
	Participant string
	// Ahead is the number of contenders before this one in the line
	// when the wait began: the recipe's own and its peers' (Curator's,
	// Kazoo's) that it waits behind.
	Ahead int
}

// WaitDone is the end of a Wait.
type WaitDone struct {
	// Err is nil when the contender's turn came (the hold follows);
	// otherwise why the wait ended: the caller's context error, or the
	// session's loss (ErrSessionLost, ErrSuspended), or the recipe's own
	// error.
	Err error
	// Duration is the time since the wait began.
	Duration time.Duration
}

// Hold is a hold of a recipe: a lock, a read or write lock, a
// semaphore's lease, a leader's term, a queue item taken, an item of a
// partition's share.
type Hold struct {
	// Recipe names the recipe, as Wait.Recipe.
	Recipe string
	// Path is the recipe's path as the caller gave it.
	Path string
	// Participant is the path of the hold's node (a queue item's taken
	// node).
	Participant string
	// Token is the hold's fencing token: its node's creation zxid.
	Token int64
	// SessionID is the session the hold belongs to.
	SessionID int64
}

// HoldDone is the end of a Hold.
type HoldDone struct {
	// Cause is nil when the holder released the hold; otherwise why it
	// was lost, the same error the hold reports (context.Cause of its
	// Context): wrapping ErrSuspended, ErrSessionLost, ErrNodeDeleted, or
	// the recipe's own (a revocation).
	Cause error
	// Duration is how long the hold lasted.
	Duration time.Duration
	// Consumed says, for a queue item's hold (Recipe "queue"), that the
	// item was consumed: removed from the queue. An item released, or
	// lost, is not: it is delivered again.
	Consumed bool
}

// ClientClosed is the end of a client by its Close.
type ClientClosed struct {
	// SessionID is the session Close ended; 0 if the client was between
	// sessions.
	SessionID int64
}

// CounterOutcome is what a shared counter learnt of its write whose
// answer was lost.
type CounterOutcome struct {
	// Path is the counter's path as its caller gave it.
	Path string
	// Settled says that a read after the loss proved whether the write
	// applied; Applied, then, says whether it did. A write not applied is
	// tried again, within the operation's retry policy.
	Settled bool
	Applied bool
	// Err, when the outcome was left unknown, is why: an error wrapping
	// ErrOutcomeUnknown (the write's session ended, or the operation's
	// context, before the read could tell). Nil when settled.
	Err error
}

// ViewChange is a change of a view's trust.
type ViewChange struct {
	// Recipe names the view: "cache", "node", "discovery" or "group".
	Recipe string
	// Path is the view's path as its caller gave it.
	Path string
	// Trusted is true when a trust period begins, false when it ends.
	Trusted bool
	// Cause says why a trust period ended, as the view's Err does (for a
	// cache: cache.ErrSuspended, an error wrapping ErrSessionLost,
	// cache.ErrClosed...); nil when one begins.
	Cause error
}

// observer returns the client's observer, nil without one: the recipes
// built on the client tell it of their waits and holds.
func (c *Client) observer() *Observer { return c.opts.observer }

// attemptKey carries the attempt number of an operation to its requests
// (reqScope), set only when the observer has a Request function.
type attemptKey struct{}

// withAttempt returns ctx carrying attempt n for the requests made under
// it; ctx itself when nobody observes requests.
func (c *Client) withAttempt(ctx context.Context, n int) context.Context {
	if o := c.opts.observer; o == nil || o.Request == nil {
		return ctx
	}
	return context.WithValue(ctx, attemptKey{}, n)
}

// reqTrace is one observed request; its zero value observes nothing.
type reqTrace struct {
	done func(RequestDone)
	at   time.Time
}

// sent tells the observer of a request of op on server path sp, sent on
// handle zc (nil: the current one) with bytes on the wire (0: unknown).
func (c *Client) sent(ctx context.Context, zc *zk.Conn, op, sp string, watch bool, bytes int) reqTrace {
	o := c.opts.observer
	if o == nil || o.Request == nil {
		return reqTrace{}
	}
	c.mu.Lock()
	var id int64
	if c.tr != nil && (zc == nil || c.zc == zc) {
		id = c.tr.SessionID()
	}
	c.mu.Unlock()
	return c.sentIn(ctx, id, op, sp, watch, bytes)
}

// sentIn is sent for a request of session id; it takes no lock of the
// client's.
func (c *Client) sentIn(ctx context.Context, id int64, op, sp string, watch bool, bytes int) reqTrace {
	o := c.opts.observer
	if o == nil || o.Request == nil {
		return reqTrace{}
	}
	attempt, _ := ctx.Value(attemptKey{}).(int)
	if attempt == 0 {
		attempt = 1
	}
	if op == "create" && strings.HasPrefix(lastComponent(sp), ProtectedPrefix) {
		op = "create2" // the tracker sends a protected create as create2
	}
	done := o.Request(ctx, Request{Op: op, Path: sp, Watch: watch, SessionID: id, Attempt: attempt, Bytes: bytes})
	if done == nil {
		return reqTrace{}
	}
	return reqTrace{done: done, at: time.Now()}
}

// answered reports the outcome of the request, once; bytes is the
// answer's length on the wire, 0 if unknown.
func (t reqTrace) answered(err error, bytes int) {
	if t.done == nil {
		return
	}
	if err != nil {
		bytes = 0
	}
	t.done(RequestDone{Err: err, Duration: time.Since(t.at), Bytes: bytes})
}

// traced is f, one go-zookeeper request of op on server path sp on handle
// zc, told to the observer as it is sent and answered.
func traced[T any](c *Client, ctx context.Context, zc *zk.Conn, op, sp string, watch bool, f func() (T, error)) func() (T, error) {
	if o := c.opts.observer; o == nil || o.Request == nil {
		return f
	}
	return func() (T, error) {
		t := c.sent(ctx, zc, op, sp, watch, 0)
		v, err := f()
		t.answered(err, 0)
		return v, err
	}
}

// tracedErr is traced for a request with no result but its error.
func tracedErr(c *Client, ctx context.Context, zc *zk.Conn, op, sp string, f func() error) func() error {
	if o := c.opts.observer; o == nil || o.Request == nil {
		return f
	}
	return func() error {
		t := c.sent(ctx, zc, op, sp, false, 0)
		err := f()
		t.answered(err, 0)
		return err
	}
}

// tracedWire is done, the callback of request req of op on server path
// sp that the wire client sends in session id, told to the observer as it
// is sent and answered. The wire client calls a request's callback once,
// unless it does not take the request: the caller then calls notSent with
// the wire client's error, which ends the request's report (the caller
// may send it another way, reported of its own).
func (c *Client) tracedWire(ctx context.Context, id int64, op, sp string, watch bool, req []byte, done wire.Done) (traced wire.Done, notSent func(error)) {
	if o := c.opts.observer; o == nil || o.Request == nil {
		return done, ignoreErr
	}
	t := c.sentIn(ctx, id, op, sp, watch, len(req))
	return func(zxid int64, code int32, body []byte, err error) {
		t.answered(wireErr(code, err), replyBytes(body))
		done(zxid, code, body, err)
	}, func(err error) { t.answered(err, 0) }
}

func ignoreErr(error) {}

// replyBytes is the length on the wire of a reply with body: the length
// prefix and the reply header (xid, zxid, err) before it.
func replyBytes(body []byte) int { return 4 + 16 + len(body) }

// notified tells the observer of a watch notification of handle zc, before
// its watches fire. go-zookeeper's own EventNotWatching, at the end of a
// handle, is not one.
func (c *Client) notified(zc *zk.Conn, ev zk.Event, session int64) {
	o := c.opts.observer
	if o == nil || o.Notification == nil {
		return
	}
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
		o.Notification(Notification{Type: ev.Type, Path: ev.Path, SessionID: session, SinceWatch: c.watchedSince(zc, ev)})
	}
}

// watchesTimed says whether Watches keep the time they were armed at:
// only for an observer of notifications, the one reader of that time.
func (c *Client) watchesTimed() bool {
	o := c.opts.observer
	return o != nil && o.Notification != nil
}

// monoStart is the origin of Watch.armedAt: a reading of the monotonic
// clock.
var monoStart = time.Now()

// watchedSince is the time since the oldest Watch of handle zc that ev
// fires was armed; 0 if it fires none.
func (c *Client) watchedSince(zc *zk.Conn, ev zk.Event) time.Duration {
	now := time.Since(monoStart)
	var oldest time.Duration
	c.watchMu.Lock()
	for _, k := range firedKinds(ev.Type) {
		for w := c.watches[watchKey{zc, ev.Path, k}]; w != nil; w = w.next {
			if at := time.Duration(w.armedAt); at > 0 && (oldest == 0 || at < oldest) {
				oldest = at
			}
		}
	}
	c.watchMu.Unlock()
	if oldest == 0 {
		return 0
	}
	return now - oldest
}

// closedTold tells the observer that Close ended the client, whose last
// session was id (0: none).
func (c *Client) closedTold(id int64) {
	if o := c.opts.observer; o != nil && o.Closed != nil {
		o.Closed(ClientClosed{SessionID: id})
	}
}
