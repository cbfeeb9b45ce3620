package queue

import (
	"context"
	"errors"
	"path"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Errors of the queue. Match them with errors.Is.
var (
	// ErrEmpty is returned by TryTake when no item is available.
	ErrEmpty = errors.New("queue: no item available")
	// ErrItemLost is returned by Consume and Release when the take was
	// lost before: the item is back in the queue, and another worker may
	// process it. It, and a lost take's Err, wraps what happened:
	// connection.ErrSuspended, connection.ErrSessionLost or
	// connection.ErrNodeDeleted (see Item.Err).
	ErrItemLost = errors.New("queue: item lost")
	// ErrFinished is returned by Consume and Release on an item that was
	// consumed or released before, and is its Err (its Context's cause)
	// then.
	ErrFinished = errors.New("queue: item already consumed or released")
	// ErrOutcomeUnknown is returned by Consume and Release, together with
	// the error that says why (which also matches
	// connection.ErrOutcomeUnknown), when the write was sent and no answer
	// came: for Consume, the item may have been removed, or will be
	// delivered again. The take is over either way.
	ErrOutcomeUnknown = errors.New("queue: outcome unknown: the transaction was sent and not answered")
	// ErrInvalidPriority means a priority outside MinPriority..MaxPriority.
	ErrInvalidPriority = errors.New("queue: invalid priority")
	// ErrClosed is returned by every method of a Queue after Close, and
	// by a Put, Take or TryTake that Close ended.
	ErrClosed = errors.New("queue: closed")
)

// Directory names: Kazoo's LockingQueue, and the line of idle Go workers.
const (
	entriesDir = "entries"
	takenDir   = "taken"
	takersDir  = "takers"
)

// Queue is a work queue at a path. Its methods are safe for concurrent
// use; each Take call is a worker of its own.
type Queue struct {
	client  *connection.Client
	path    string
	entries string
	taken   string
	data    []byte
	line    lockcore.Lock // idle workers wait here, one watching the queue

	ensured atomic.Bool
	c       closer // what Close ends (close.go)

	afterMade    func() // tests: called once a take's taken node is made
	beforeCreate func() // tests: called as a take's taken node is about to be made
}

// Option configures a Queue.
type Option func(*Queue) error

// WithData sets the data of this queue's taken nodes (and of its place in
// the line of idle workers), which Entries shows as the taker. By default
// it is the client's DefaultData, the host's address.
func WithData(data []byte) Option {
	return func(q *Queue) error {
		q.data = append([]byte{}, data...)
		return nil
	}
}

// New returns the queue at path. Nothing is created until Put or Take.
func New(c *connection.Client, p string, opts ...Option) (*Queue, error) {
	if c == nil {
		return nil, errtext.Errorf("queue: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(p); err != nil {
		return nil, errtext.Errorf("queue: %w", err)
	}
	if p == "/" {
		return nil, errtext.Errorf("queue: %w: the root cannot be a queue", connection.ErrInvalidPath)
	}
	q := &Queue{
		client:  c,
		path:    p,
		entries: path.Join(p, entriesDir),
		taken:   path.Join(p, takenDir),
		data:    connx.Of(c).DefaultData(),
	}
	q.c.init()
	for _, o := range opts {
		if o == nil {
			return nil, errtext.Errorf("queue: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(q); err != nil {
			return nil, err
		}
	}
	q.line = lockcore.Lock{
		Client:    c,
		Dir:       path.Join(p, takersDir),
		Name:      "lock-",
		Data:      q.data,
		Accept:    lockcore.MutexKinds,
		Predicate: lockcore.Predecessor,
		Window:    1,
		Line:      true, // the taken nodes decide who has an item
	}
	return q, nil
}

// Path returns the queue's path.
func (q *Queue) Path() string { return q.path }

func (q *Queue) errorf(op string, err error) error {
	return errtext.Errorf("queue: %s %s: %w", op, q.path, err)
}

// ensure makes the entries and taken directories, once: persistent, as
// Kazoo does (it remembers that it made them, so they must stay).
func (q *Queue) ensure(ctx context.Context) error {
	if q.ensured.Load() {
		return nil
	}
	for _, dir := range []string{q.entries, q.taken} {
		if err := q.client.EnsurePath(ctx, dir); err != nil {
			return err
		}
	}
	q.ensured.Store(true)
	return nil
}

// PutOption configures Put.
type PutOption func(*putConfig) error

type putConfig struct{ priority int }

// WithPriority puts the item ahead of every item of a higher number:
// MinPriority (0) first, MaxPriority (999) last, DefaultPriority (100)
// unless told — Kazoo's priorities.
func WithPriority(p int) PutOption {
	return func(c *putConfig) error {
		if p < MinPriority || p > MaxPriority {
			return errtext.Errorf("%w: %d is not in %d..%d", ErrInvalidPriority, p, MinPriority, MaxPriority)
		}
		c.priority = p
		return nil
	}
}

// Put adds an item with data to the end of its priority. A sequential
// create is not retried after a lost connection: if Put fails with a
// connection error, the item may or may not be in the queue (putting it
// again may deliver it twice, which at-least-once allows).
//
// Once the entries directory's sequence numbers are used up (2^31 puts
// since it was made), Put fails with an error matching
// connection.ErrSequenceExhausted, and the item is not in the queue: the
// names would no longer keep the items in order. The queue's directory
// must be deleted and made again. (If a worker took the item in the
// moment before Put withdrew it, Put returns nil: it was delivered.)
func (q *Queue) Put(ctx context.Context, data []byte, opts ...PutOption) error {
	cctx, leave, err := q.enter(ctx)
	if err != nil {
		return q.errorf("put", err)
	}
	defer leave()
	if err := q.put(cctx, data, opts); err != nil {
		return q.errorf("put", q.callErr(ctx, err))
	}
	return nil
}

func (q *Queue) put(ctx context.Context, data []byte, opts []PutOption) error {
	cfg := putConfig{priority: DefaultPriority}
	for _, o := range opts {
		if o == nil {
			return errtext.Errorf("queue: nil option: %w", connection.ErrInvalidOption)
		}
		if err := o(&cfg); err != nil {
			return err
		}
	}
	for range 2 {
		if err := q.ensure(ctx); err != nil {
			return err
		}
		created, err := q.client.Create(ctx, path.Join(q.entries, entryName(cfg.priority)), data, connection.PersistentSequential)
		if errors.Is(err, zk.ErrNoNode) {
			q.ensured.Store(false) // someone deleted the directories
			continue
		}
		if err == nil {
			err = q.placed(ctx, created)
		}
		return err
	}
	return errtext.Errorf("%s keeps disappearing: %w", q.entries, zk.ErrNoNode)
}

// Take waits for the first available item and takes it: it is invisible
// to other workers until Consume, Release, or the end of this client's
// session (then it is back at its place). Idle workers line up, and only
// the first in line watches the queue. On failure (ctx's end included)
// nothing taken is kept.
func (q *Queue) Take(ctx context.Context) (*Item, error) {
	return q.takeCall(ctx, q.take)
}

// takeCall runs take as a call Close can end.
func (q *Queue) takeCall(ctx context.Context, take func(context.Context) (*Item, error)) (*Item, error) {
	cctx, leave, err := q.enter(ctx)
	if err != nil {
		return nil, q.errorf("take", err)
	}
	defer leave()
	it, err := take(cctx)
	if err != nil {
		if e := q.callErr(ctx, err); e != err {
			return nil, q.errorf("take", e)
		}
		return nil, err
	}
	if !q.track(it) {
		return nil, q.errorf("take", ErrClosed)
	}
	return it, nil
}

func (q *Queue) take(ctx context.Context) (*Item, error) {
	if err := q.ensure(ctx); err != nil {
		return nil, q.errorf("take", err)
	}
	for {
		place, err := q.line.Acquire(ctx, true)
		if err != nil {
			return nil, q.errorf("take", err)
		}
		ln := &linePlace{q: q, place: place, left: make(chan struct{})}
		it, err := q.await(ctx, ln)
		ln.leave()
		if it != nil && it.hold.Lost() {
			// Lost while the place in line was given up (a request, which
			// slow answers can draw out to a session timeout): a lost take
			// is never handed out. Its taken node is deleted while its
			// session lives; take again.
			_ = it.hold.End(context.Background(), nil)
			it, err = nil, errRestart
		}
		if errors.Is(err, errRestart) && ctx.Err() == nil {
			continue // our place in line went with its session
		}
		if errors.Is(err, errRestart) {
			err = ctx.Err()
		}
		if err != nil {
			return nil, q.errorf("take", err)
		}
		return it, nil
	}
}

// TryTake takes the first available item, or returns an error matching
// ErrEmpty without waiting. It still makes requests, and may wait for
// them up to ctx.
func (q *Queue) TryTake(ctx context.Context) (*Item, error) {
	return q.takeCall(ctx, q.tryTake)
}

func (q *Queue) tryTake(ctx context.Context) (*Item, error) {
	if err := q.ensure(ctx); err != nil {
		return nil, q.errorf("take", err)
	}
	for {
		it, _, err := q.scan(ctx, nil)
		if errors.Is(err, errRestart) && ctx.Err() == nil {
			continue
		}
		if errors.Is(err, errRestart) {
			err = ctx.Err()
		}
		switch {
		case err != nil:
			return nil, q.errorf("take", err)
		case it == nil:
			return nil, q.errorf("take", ErrEmpty)
		}
		return it, nil
	}
}

// errRestart: the session changed under a take; start again.
var errRestart = errors.New("queue: restart")

// await is the first in line's wait: scan the queue, and if nothing is
// available, wait for a change of either directory.
func (q *Queue) await(ctx context.Context, ln *linePlace) (*Item, error) {
	for {
		it, changed, err := q.scan(ctx, ln)
		if it != nil || err != nil {
			return it, err
		}
		select {
		case <-changed[0]:
		case <-changed[1]:
		case <-ln.place.Session.Done():
			return nil, errRestart
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// linePlace is a worker's place at the head of the line, which it gives
// up once, either early (leaveSoon, in the background, as soon as the
// create of its taken node is written) or when its wait ends (leave, which also waits for
// an early leave to be done, so that Take returns with no request of its
// own in flight).
//
// The head leaves as the create of its taken node is written: the delete
// of its place goes out behind the create on the same connection
// (connection.ClaimHooks.Written), not after its answer, and the line's
// path per item is the listing and that one round trip. (When the hook is
// not called — the create failed before it was written, or another worker
// of this client was claiming the same item — the place goes once the
// claim returns: later, still behind the create.)
//
// Safe: the line decides nothing about who has an item — the taken node
// alone does, and no create of another worker can succeed on it while it
// is there — so giving up the place early can never let two workers take
// one item; at worst it costs a refused create. The order is kept too.
// The next in line moves up when it hears our place deleted; our create
// was written before that delete, on the same connection, so the leader
// applies it first,
// and if the next one's listing, on a server that has not applied our
// create yet, shows our item free, its own create of the item is refused
// and it takes the next one: each item's first take still comes before
// the next item's. What changes is what happens after: the rest of the
// take (reading the taken node back, the entry's data, the hold) no
// longer keeps the next worker waiting. If our create is refused (a
// worker that does not line up, or a TryTake, had the item), or the rest
// fails or finds the item gone, the worker is no longer at the head, and
// it lines up again (errRestart) rather than scanning on beside the new
// head.
type linePlace struct {
	q      *Queue
	place  lockcore.Acquired
	once   sync.Once
	left   chan struct{} // closed once the place is given up
	early  bool          // leaveSoon was called; read after once
	listed bool          // the head has listed the queue once
}

// leaveSoon gives up the place in the background. It is the claim's
// Written hook, called from the connection's writer, so it must never
// block: its once.Do body only starts a goroutine, and leave's blocking
// body never runs once leaveSoon has (claim calls leaveSoon after the
// claim in any case, before Take can call leave).
func (ln *linePlace) leaveSoon() {
	ln.once.Do(func() {
		ln.early = true
		go func() {
			defer close(ln.left)
			ln.q.leave(ln.place)
		}()
	})
}

// gone reports whether leaveSoon was called: the worker is no longer at
// the head of the line. Only the goroutine of the take calls it.
func (ln *linePlace) gone() bool { return ln != nil && ln.early }

// leave gives up the place, if it is still held, and waits until it is.
func (ln *linePlace) leave() {
	ln.once.Do(func() {
		defer close(ln.left)
		ln.q.leave(ln.place)
	})
	<-ln.left
}

// leave gives up a place in line, so that the next idle worker moves up.
func (q *Queue) leave(place lockcore.Acquired) {
	ctx, cancel := context.WithTimeout(context.Background(), lockcore.CleanupTimeout(place.Session))
	defer cancel()
	if err := q.line.Release(ctx, place); err != nil && !errors.Is(err, connection.ErrSessionLost) {
		connx.Of(q.client).GuaranteedDelete(place.Session, place.Path, place.Token)
	}
}

// scan lists the queue and takes the first item not taken. The head of
// the line (ln not nil) watches: when it finds none, scan returns channels
// that close when that may have changed: a child watch on the entries,
// and, only while there are entries (all taken), one on the taken nodes —
// an empty queue's head is not woken by takes and releases.
//
// The two directories are listed at once, not one after the other: one
// round trip on the line's path instead of two. The listings may then be
// of different moments, which costs at worst a request: an entry taken
// after the taken nodes were listed looks free, and its create is refused
// (NodeExists); an entry consumed after the entries were listed looks
// free too, its taken node is made for nothing and deleted again when
// the entry is found gone (claim). The taken node alone decides who has
// an item, whatever the listings said.
func (q *Queue) scan(ctx context.Context, ln *linePlace) (*Item, [2]<-chan struct{}, error) {
	var changed [2]<-chan struct{}
	sess, err := q.client.WaitSession(ctx)
	if err != nil {
		return nil, changed, err
	}
	list := func(dir string, i int, watch bool) ([]string, error) {
		if !watch {
			names, _, err := q.client.Children(ctx, dir)
			return names, err
		}
		names, _, w, err := q.client.ChildrenWatch(ctx, dir)
		if err == nil {
			changed[i] = w.Done()
		}
		return names, err
	}
	// The head watches the taken nodes with its first listing only. It
	// lists again when woken, and then most often finds the queue empty
	// (the item it waited on consumed) or takes an item (a put): a watch
	// set then would only fire at its own take. Should it find every
	// entry taken, it sets the watch before it waits (below).
	watchTaken := ln != nil && !ln.listed
	if ln != nil {
		ln.listed = true
	}
	type listing struct {
		names []string
		err   error
	}
	takenc := make(chan listing, 1)
	go func() {
		names, err := list(q.taken, 1, watchTaken)
		takenc <- listing{names, err}
	}()
	entries, err := list(q.entries, 0, ln != nil)
	tl := <-takenc
	taken := tl.names
	if err == nil {
		err = tl.err
	}
	if len(entries) == 0 {
		changed[1] = nil // an empty queue's head waits for a put alone
	}
	if errors.Is(err, zk.ErrNoNode) {
		q.ensured.Store(false)
		if err := q.ensure(ctx); err != nil {
			return nil, changed, err
		}
		return nil, changed, errRestart
	}
	if err != nil {
		return nil, changed, restartOn(err)
	}
	busy := make(map[string]bool, len(taken))
	for _, name := range taken {
		busy[name] = true
	}
	for _, e := range sortEntries(entries) {
		if busy[e.name] {
			continue
		}
		it, err := q.claim(ctx, sess, e, ln)
		if it != nil || err != nil {
			return it, changed, err
		}
		if ln.gone() {
			// Our taken node was made, and we left the line, but the
			// item was not to be had (consumed in the meantime): line up
			// again rather than scan on beside the new head.
			return nil, changed, errRestart
		}
	}
	if ln == nil {
		return nil, changed, nil
	}
	if len(entries) > 0 && changed[1] == nil {
		// Every entry taken, and the taken nodes not watched: watch them
		// now. Had one gone since the listing, the watch, set after it,
		// would not say so: with an entry free, scan again at once.
		names, err := list(q.taken, 1, true)
		if err != nil {
			return nil, changed, restartOn(err)
		}
		busy := make(map[string]bool, len(names))
		for _, name := range names {
			busy[name] = true
		}
		for _, e := range sortEntries(entries) {
			if !busy[e.name] {
				changed[1] = closedChan
				break
			}
		}
	}
	return nil, changed, nil
}

// closedChan is a channel that is closed: a wait on it ends at once.
var closedChan = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// claim tries to take entry e in session sess: it creates e's taken node,
// with this take's own identity in its data (takenData), so that several
// workers of one client — one session — never take one item for each
// other: the session owns the node, the take's identity says which worker
// does. It returns nil, nil when another worker has it or it is gone.
func (q *Queue) claim(ctx context.Context, sess *connection.Session, e entry, ln *linePlace) (*Item, error) {
	tpath := path.Join(q.taken, e.name)
	data := takenData(q.data)
	// The create is not abandoned half-way when ctx ends: its outcome must
	// be known, or a taken node could be left behind for the session's
	// life, hiding the item (Claim deletes such a node in the background
	// all the same).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*lockcore.CleanupTimeout(sess))
	defer cancel()
	// The head of the line lets the next worker up as its create is
	// written (see linePlace). The moment the create is answered, the
	// entry's data are read beside the read-back of the taken node. The
	// entry is read after our create was answered, so a consume of the
	// item before our take is seen (NoNode) — as when the read came after
	// the read-back.
	type read struct {
		data []byte
		err  error
	}
	if q.beforeCreate != nil {
		q.beforeCreate()
	}
	var written func()
	if ln != nil {
		// The place goes as the create is written: its delete then goes
		// out behind the create, on the same connection.
		written = ln.leaveSoon
	}
	var entryc chan read
	made := func() {
		if q.afterMade != nil {
			q.afterMade()
		}
		entryc = make(chan read, 1)
		go func() {
			d, _, err := q.client.Get(ctx, path.Join(q.entries, e.name))
			entryc <- read{d, err}
		}()
	}
	created, own, err := connx.Of(q.client).ClaimThen(connx.Pin(cctx, sess), tpath, data, connx.ClaimHooks{Written: written, Made: made})
	if ln != nil {
		// Not written (it failed first), or Written not offered (another
		// worker of this client was claiming the item): leave now.
		ln.leaveSoon()
	}
	var er read
	if entryc != nil {
		er = <-entryc // joined whatever Claim said: no read outlives the take
	}
	switch {
	case errors.Is(err, zk.ErrNodeExists):
		return nil, nil // another worker's, of this client or another
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, connection.ErrSessionLost):
		return nil, restartOn(err) // nothing made, or it went with the session
	case err != nil && ctx.Err() == nil && cctx.Err() != nil:
		// The claim's own bound ran out, not the caller's: the link is
		// slow or cut, and the session's fate not yet known. A node the
		// claim may have made is deleted in the background (Claim); take
		// again, from the line, rather than fail the take.
		return nil, errRestart
	case err != nil:
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lockcore.Abandon(q.client, sess, tpath, created.Czxid)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if entryc == nil {
		// Claim found our node after a lost answer: read the entry now.
		er.data, _, er.err = q.client.Get(ctx, path.Join(q.entries, e.name))
	}
	edata, err := er.data, er.err
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil // consumed between the listing and the take
	}
	if err != nil {
		return nil, restartOn(err)
	}
	a, err := lockcore.Confirm(ctx, q.client, lockcore.Acquired{Path: tpath, Session: sess, Token: created.Czxid, Own: own})
	if err != nil {
		return nil, restartOn(err)
	}
	hold := lockcore.NewHold(q.client, a, lockcore.HoldConfig{Lost: ErrItemLost, Released: ErrFinished,
		Recipe: "queue", Path: q.path, Ctx: ctx})
	if hold.Lost() {
		hold.Stop()
		return nil, errRestart
	}
	ok = true
	return &Item{q: q, e: e, data: edata, hold: hold}, nil
}

func restartOn(err error) error {
	if errors.Is(err, connection.ErrSessionLost) {
		return errRestart
	}
	return err
}

// Item is an item taken by this worker.
type Item struct {
	q    *Queue
	e    entry
	data []byte
	hold *lockcore.Hold

	mu       sync.Mutex
	finished bool
}

// Data returns the item's data.
func (it *Item) Data() []byte { return it.data }

// Name returns the item's node name, "entry-<priority>-<sequence>".
func (it *Item) Name() string { return it.e.name }

// Priority returns the item's priority.
func (it *Item) Priority() int { return it.e.priority }

// Token returns the czxid of this take's taken node: it increases from
// take to take of the item, so a system that records results can refuse a
// stale worker's.
func (it *Item) Token() int64 { return it.hold.Token }

// Guard returns a guard of this take for connection.Client.Multi: the
// transaction commits only while the take lasts — its taken node still
// there, in its session, and the item not consumed, released or lost —
// all or nothing. A worker that records its result in ZooKeeper does so
// under the guard, and a result of a take that was lost (the item goes
// to another worker) never lands. A take that ended makes Multi fail with
// connection.ErrGuardFailed (and ErrItemLost or ErrFinished), nothing
// applied.
//
// The taken node is at a fixed path that another worker may make again
// once this one is gone: the transaction is written in the take's session
// only, and only while the take is on. If someone else deletes the taken
// node and another worker takes the item at once, a transaction written
// before this worker heard of the deletion can still commit, as its Done
// is still open then.
func (it *Item) Guard() *connection.Guard { return it.hold.Guard() }

// Done returns a channel that is closed when this take can no longer be
// trusted under the connection's error policy — from then on another
// worker may take the item — or when the item is consumed or released.
func (it *Item) Done() <-chan struct{} { return it.hold.Done() }

// Context returns a context for the item's processing: cancelled when Done
// closes, with Err as its cause.
func (it *Item) Context() context.Context { return it.hold.Context() }

// Err returns nil while the take lasts, and then why it ended, as
// Context's cause does: ErrFinished after Consume or Release, or
// ErrItemLost wrapping what happened first — connection.ErrSuspended (the
// connection was suspended under connection.StandardPolicy; the session
// may live on), connection.ErrSessionLost (the session ended) or
// connection.ErrNodeDeleted (another client deleted the taken node). A
// lost item is delivered again.
func (it *Item) Err() error { return it.hold.Cause() }

// Consume removes the item from the queue (Kazoo's consume): its entry
// and its taken node go in one transaction, in the take's session only.
// The take ends before the transaction is sent (Done closes): from then on
// the item is not this worker's, whatever the answer. It returns an error
// matching ErrItemLost when the take was lost first (the item is back in
// the queue and will be delivered again), and ErrFinished when the item
// was consumed or released before. If the transaction was sent and its
// answer lost (ctx ended first, or the connection was lost), the error
// also matches ErrOutcomeUnknown: the item may be gone, or will be
// delivered again — its taken node is deleted in the background while the
// session lives, if the transaction did not take it.
func (it *Item) Consume(ctx context.Context) error {
	return it.finish(ctx, "consume", it.remove)
}

// Release puts the item back at its place for another worker (or this
// one) to take; it returns the errors Consume does. The take ends before
// the delete is sent.
func (it *Item) Release(ctx context.Context) error {
	return it.finish(ctx, "release", it.untake)
}

func (it *Item) finish(ctx context.Context, op string, release func(context.Context, lockcore.Acquired) error) error {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.finished {
		return it.errorf(op, ErrFinished)
	}
	it.finished = true
	it.q.untrack(it)
	var err error
	if op == "consume" {
		err = it.hold.EndConsumed(ctx, release)
	} else {
		err = it.hold.End(ctx, release)
	}
	if err != nil && errors.Is(err, connection.ErrOutcomeUnknown) {
		err = errors.Join(ErrOutcomeUnknown, err)
	}
	if err != nil {
		return it.errorf(op, err)
	}
	return nil
}

func (it *Item) errorf(op string, err error) error {
	return errtext.Errorf("queue: %s %s/%s: %w", op, it.q.entries, it.e.name, err)
}

// remove deletes the entry and the taken node together, pinned to the
// take's session. It is sent once: a transaction whose answer was lost is
// never sent again (connection.Multi), and a taken node it may have left
// is deleted by czxid (lockcore.Hold.End).
func (it *Item) remove(ctx context.Context, a lockcore.Acquired) error {
	_, err := it.q.client.Multi(connx.Pin(ctx, a.Session),
		&zk.DeleteRequest{Path: path.Join(it.q.entries, it.e.name), Version: -1},
		&zk.DeleteRequest{Path: a.Path, Version: -1})
	if err != nil && !connx.Of(it.q.client).Live(a.Session) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		return errtext.Errorf("%w (%w)", connection.ErrSessionLost, err)
	}
	return err
}

// untake deletes the taken node, pinned to the take's session, proving
// after a lost answer that it is still this take's (lockcore.Release): the
// path is one any worker may create again once it is gone.
func (it *Item) untake(ctx context.Context, a lockcore.Acquired) error {
	return lockcore.Release(ctx, it.q.client, a)
}
