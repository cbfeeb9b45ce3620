package queue

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

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
	cctx, leave, err := q.c.Enter(ctx)
	if err != nil {
		return nil, q.errorf("take", err)
	}
	defer leave()
	cctx, tw := q.observeTake(cctx)
	it, err := take(cctx)
	if err != nil {
		if e := q.c.CallErr(ctx, err); e != err {
			err = q.errorf("take", e)
		}
		tw.end(err)
		return nil, err
	}
	if !q.c.Track(it) {
		err := q.errorf("take", ErrClosed)
		tw.end(err)
		return nil, err
	}
	tw.end(nil)
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
		ctx = waitContext(ctx) // the wait's, if it began in the line
		ln := &linePlace{q: q, place: place, left: make(chan struct{})}
		it, err := q.await(ctx, ln)
		ln.leave()
		if it != nil && it.hold.Lost() {
			// Lost while the place in line was given up (a request, which
			// slow answers can draw out to a session timeout): a lost take
			// is never handed out. Its taken node is deleted while its
			// session lives; take again.
			_ = it.hold.End(context.Background(), nil)
			it, err = nil, lockcore.ErrRestart
		}
		again, err := lockcore.Restarting(ctx, err)
		if again {
			ctx = waitContext(ctx) // the wait's, if it began at the head
			continue               // our place in line went with its session
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
		again, err := lockcore.Restarting(ctx, err)
		if again {
			continue
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

// await is the first in line's wait: scan the queue, and if nothing is
// available, wait for a change of either directory.
func (q *Queue) await(ctx context.Context, ln *linePlace) (*Item, error) {
	for {
		it, changed, err := q.scan(ctx, ln)
		if it != nil || err != nil {
			return it, err
		}
		ctx = waiting(ctx, ln.place.Path, 0)
		select {
		case <-changed[0]:
		case <-changed[1]:
		case <-ln.place.Session.Done():
			return nil, lockcore.ErrRestart
		case <-ctx.Done():
			return nil, ctx.Err()
		}
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
		return nil, changed, lockcore.ErrRestart
	}
	if err != nil {
		return nil, changed, lockcore.RestartOn(err)
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
			return nil, changed, lockcore.ErrRestart
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
			return nil, changed, lockcore.RestartOn(err)
		}
		busy := make(map[string]bool, len(names))
		for _, name := range names {
			busy[name] = true
		}
		for _, e := range sortEntries(entries) {
			if !busy[e.name] {
				changed[1] = chanx.Closed
				break
			}
		}
	}
	return nil, changed, nil
}

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
		return nil, lockcore.RestartOn(err) // nothing made, or it went with the session
	case err != nil && ctx.Err() == nil && cctx.Err() != nil:
		// The claim's own bound ran out, not the caller's: the link is
		// slow or cut, and the session's fate not yet known. A node the
		// claim may have made is deleted in the background (Claim); take
		// again, from the line, rather than fail the take.
		return nil, lockcore.ErrRestart
	case err != nil:
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lockcore.Abandon(q.client, lockcore.Acquired{Path: tpath, Session: sess, Token: created.Czxid})
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
		return nil, lockcore.RestartOn(err)
	}
	a, err := lockcore.Confirm(ctx, q.client, lockcore.Acquired{Path: tpath, Session: sess, Token: created.Czxid, Own: own})
	if err != nil {
		return nil, lockcore.RestartOn(err)
	}
	hold := lockcore.NewHold(q.client, a, lockcore.HoldConfig{Lost: ErrItemLost, Released: ErrFinished,
		Recipe: "queue", Path: q.path, Ctx: ctx})
	if hold.Lost() {
		hold.Stop()
		return nil, lockcore.ErrRestart
	}
	ok = true
	return &Item{q: q, e: e, data: edata, hold: hold}, nil
}
