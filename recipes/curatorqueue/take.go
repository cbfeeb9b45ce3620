package curatorqueue

import (
	"context"
	"errors"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/chanx"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Take waits for a message and takes it: the first in the queue's order
// that no other consumer has. Without a lock path the message is deleted
// as it is taken; with one it is locked, and held until Consume or
// Release (see WithLockPath). On a delay queue a message is not taken
// before it is due. On failure (ctx's end included) nothing taken is
// kept, except as ErrOutcomeUnknown and ErrCorrupt say.
func (q *Queue) Take(ctx context.Context) (*Message, error) {
	return q.takeCall(ctx, true)
}

// TryTake takes a message as Take does, or returns an error matching
// ErrEmpty without waiting for one. It still makes requests, and may wait
// for them up to ctx.
func (q *Queue) TryTake(ctx context.Context) (*Message, error) {
	return q.takeCall(ctx, false)
}

func (q *Queue) takeCall(ctx context.Context, wait bool) (*Message, error) {
	cctx, leave, err := q.c.Enter(ctx)
	if err != nil {
		return nil, q.errorf("take", err)
	}
	defer leave()
	m, err := q.take(cctx, wait)
	if err != nil {
		return m, q.errorf("take", q.c.CallErr(ctx, err))
	}
	if m.hold != nil && !q.c.Track(m) {
		return nil, q.errorf("take", ErrClosed)
	}
	return m, nil
}

func (q *Queue) take(ctx context.Context, wait bool) (*Message, error) {
	for {
		m, changed, due, err := q.scan(ctx, wait)
		again, err := lockcore.Restarting(ctx, err)
		if again {
			continue
		}
		if m != nil || err != nil {
			return m, err
		}
		if !wait {
			return nil, ErrEmpty
		}
		if err := awaitChange(ctx, changed, due); err != nil {
			return nil, err
		}
	}
}

// awaitChange waits until changed closes, the time due comes (if not
// zero), or ctx ends.
func awaitChange(ctx context.Context, changed <-chan struct{}, due time.Time) error {
	var timer <-chan time.Time
	if !due.IsZero() {
		t := time.NewTimer(time.Until(due))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-changed:
	case <-timer:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// scan lists the queue (with a watch when the caller will wait) and takes
// the first message it can, in the queue's order. When it takes none, it
// returns a channel that closes when that may have changed and, on a delay
// queue, when the first message not yet due will be.
func (q *Queue) scan(ctx context.Context, watch bool) (*Message, <-chan struct{}, time.Time, error) {
	if err := q.ensure(ctx); err != nil {
		return nil, nil, time.Time{}, err
	}
	sess, err := q.client.WaitSession(ctx)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	names, changed, err := list(ctx, q.client, q.path, watch)
	if err != nil {
		return nil, nil, time.Time{}, lockcore.RestartOn(err)
	}
	now := time.Now().UnixMilli()
	var locked []string
	var due time.Time
	for _, name := range order(q.kind, names) {
		if q.kind == delayKind {
			if ms := epochOf(name); ms > now {
				// Ordered by due time: none after it is due either.
				due = time.UnixMilli(ms)
				break
			}
		}
		var m *Message
		if q.lockPath == "" {
			m, err = q.removeNow(ctx, name)
		} else {
			var busy bool
			m, busy, err = q.claim(ctx, sess, name)
			if busy {
				locked = append(locked, name)
			}
		}
		if m != nil || err != nil {
			return m, nil, time.Time{}, err
		}
	}
	if watch && len(locked) > 0 {
		// Messages locked by others come free without a change of the
		// queue's children (a consumer releases, or its session ends):
		// wait for a change of the locks too. Curator's consumers look
		// again only when the queue changes.
		unlocked, err := q.watchLocks(ctx, locked)
		if err != nil {
			return nil, nil, time.Time{}, lockcore.RestartOn(err)
		}
		changed = either(ctx, changed, unlocked)
	}
	return nil, changed, due, nil
}

// watchLocks sets a watch on the lock path's children and returns a
// channel that closes when they change — at once if a lock of names is
// already gone (it went before the watch was set, unseen).
func (q *Queue) watchLocks(ctx context.Context, names []string) (<-chan struct{}, error) {
	held, changed, err := list(ctx, q.client, q.lockPath, true)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if !slices.Contains(held, name) {
			return chanx.Closed, nil
		}
	}
	return changed, nil
}

// either returns a channel closed when a or b closes, or ctx ends.
func either(ctx context.Context, a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		defer close(out)
		select {
		case <-a:
		case <-b:
		case <-ctx.Done():
		}
	}()
	return out
}

// removeNow takes message name by deleting it (no lock path).
func (q *Queue) removeNow(ctx context.Context, name string) (*Message, error) {
	data, ok, err := remove(ctx, q.client, path.Join(q.path, name))
	if !ok && err == nil {
		return nil, nil // another consumer's
	}
	m := &Message{q: q, name: name, data: data}
	if err != nil {
		return m, err // unknown outcome: the data come back with the error
	}
	if m.items, err = decodeItems(data); err != nil {
		return m, err
	}
	return m, nil
}

// lockMark joins a lock node's data: the consumer's WithData, then the
// take's own identity, a fresh UUID, so that two consumers of one session
// never take a message for each other (the session owns the node, the
// identity says which take does).
const lockMark = "\n#take "

// claim tries to take message name under the lock path in session sess,
// as Curator's lock-safety mode does: it creates the lock node
// <lockPath>/<name>, ephemeral, then reads the message. It returns no
// message and no error when another consumer has it (busy) or it is gone.
func (q *Queue) claim(ctx context.Context, sess *connection.Session, name string) (m *Message, busy bool, err error) {
	lpath := path.Join(q.lockPath, name)
	data := append(append(append([]byte{}, q.data...), lockMark...), connx.NewUUID()...)
	// The create is not abandoned half-way when ctx ends: its outcome must
	// be known, or a lock node could be left for the session's life,
	// hiding the message (Claim deletes such a node in the background all
	// the same).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*lockcore.CleanupTimeout(sess))
	defer cancel()
	created, own, err := connx.Of(q.client).Claim(connx.Pin(cctx, sess), lpath, data)
	switch {
	case errors.Is(err, zk.ErrNodeExists):
		return nil, true, nil // another consumer's, of this client or another
	case errors.Is(err, zk.ErrNoNode):
		q.ensured.Store(false) // the lock path was deleted
		return nil, false, lockcore.ErrRestart
	case errors.Is(err, connection.ErrSessionLost):
		return nil, false, lockcore.ErrRestart
	case err != nil && ctx.Err() == nil && cctx.Err() != nil:
		// The claim's own bound ran out, not the caller's: the link is
		// slow or cut. A node it may have made is deleted in the
		// background (Claim); take again.
		return nil, false, lockcore.ErrRestart
	case err != nil:
		return nil, false, err
	}
	ok := false
	defer func() {
		if !ok {
			lockcore.Abandon(q.client, lockcore.Acquired{Path: lpath, Session: sess, Token: created.Czxid})
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	// Read after the lock is made: a message consumed (deleted under its
	// lock) before our lock is seen gone.
	mdata, _, err := q.client.Get(ctx, path.Join(q.path, name))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, lockcore.RestartOn(err)
	}
	a, err := lockcore.Confirm(ctx, q.client, lockcore.Acquired{Path: lpath, Session: sess, Token: created.Czxid, Own: own})
	if err != nil {
		return nil, false, lockcore.RestartOn(err)
	}
	hold := lockcore.NewHold(q.client, a, lockcore.HoldConfig{Lost: ErrMessageLost, Released: ErrFinished,
		Recipe: "curatorqueue", Path: q.path, Ctx: ctx})
	if hold.Lost() {
		hold.Stop()
		return nil, false, lockcore.ErrRestart
	}
	ok = true
	m = &Message{q: q, name: name, data: mdata, hold: hold}
	if m.items, err = decodeItems(mdata); err != nil {
		// Curator deletes a message it cannot read: so does this take,
		// under its lock, and hands the data back with the error.
		if cerr := m.Consume(ctx); cerr != nil {
			return m, false, errors.Join(err, cerr)
		}
		return m, false, err
	}
	return m, false, nil
}
