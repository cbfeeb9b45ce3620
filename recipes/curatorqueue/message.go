package curatorqueue

import (
	"context"
	"errors"
	"path"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Message is a message taken from a Queue: one node, one item or a batch.
// Taken under a lock path it is held — locked for this consumer — until
// Consume or Release, or until the lock can no longer be trusted (Done);
// taken without one it was deleted as it was taken, and is this
// consumer's alone.
type Message struct {
	q     *Queue
	name  string
	data  []byte
	items [][]byte
	hold  *lockcore.Hold // nil without a lock path

	mu       sync.Mutex
	finished bool
}

// Name returns the message's node name, "queue-..." as its variant names it.
func (m *Message) Name() string { return m.name }

// Items returns the message's items in the order they were put: one for
// Put, a batch for PutMulti (nil when the data are not Curator's framing,
// ErrCorrupt).
func (m *Message) Items() [][]byte { return m.items }

// Data returns the node's data as they are: the items framed as Curator
// frames them.
func (m *Message) Data() []byte { return m.data }

// Locked reports whether the message was taken under a lock path.
func (m *Message) Locked() bool { return m.hold != nil }

// Done returns a channel that is closed when the message's lock can no
// longer be trusted under the connection's error policy — from then on
// another consumer may take the message — or when the message is consumed
// or released. Without a lock path it returns nil: nothing can take the
// message from this consumer.
func (m *Message) Done() <-chan struct{} {
	if m.hold == nil {
		return nil
	}
	return m.hold.Done()
}

// Context returns a context for the message's processing: cancelled when
// Done closes, with Err as its cause (never, without a lock path).
func (m *Message) Context() context.Context {
	if m.hold == nil {
		return context.Background()
	}
	return m.hold.Context()
}

// Err returns nil while the message is held (always, without a lock
// path), and then why the hold ended: ErrFinished after Consume or
// Release, or ErrMessageLost wrapping what happened first —
// connection.ErrSuspended, connection.ErrSessionLost or
// connection.ErrNodeDeleted (another client deleted the lock node).
func (m *Message) Err() error {
	if m.hold == nil {
		return nil
	}
	return m.hold.Cause()
}

// Consume removes a message taken under a lock path from the queue: the
// message and its lock node go in one transaction, in the take's session
// only, and the hold ends (Done closes) before it is sent. It returns an
// error matching ErrMessageLost when the lock was lost first (the message
// stays in the queue for another consumer), and ErrFinished when the
// message was consumed or released before. If the transaction was sent
// and its answer lost, the error also matches ErrOutcomeUnknown: the
// message may be gone, or will be taken again. Without a lock path the
// message was removed when taken, and Consume returns nil.
func (m *Message) Consume(ctx context.Context) error {
	if m.hold == nil {
		return nil
	}
	return m.finish(ctx, "consume", m.remove)
}

// Release gives a message taken under a lock path back — at its place in
// the queue, for another consumer or this one — by deleting its lock
// node; it returns the errors Consume does. Without a lock path it
// returns an error matching ErrNoLockPath: the message is no longer in
// the queue.
func (m *Message) Release(ctx context.Context) error {
	if m.hold == nil {
		return m.errorf("release", ErrNoLockPath)
	}
	return m.finish(ctx, "release", func(ctx context.Context, a lockcore.Acquired) error {
		return lockcore.Release(ctx, m.q.client, a)
	})
}

func (m *Message) finish(ctx context.Context, op string, release func(context.Context, lockcore.Acquired) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return m.errorf(op, ErrFinished)
	}
	m.finished = true
	m.q.c.Untrack(m)
	var err error
	if op == "consume" {
		err = m.hold.EndConsumed(ctx, release)
	} else {
		err = m.hold.End(ctx, release)
	}
	if err != nil && errors.Is(err, connection.ErrOutcomeUnknown) {
		err = errors.Join(ErrOutcomeUnknown, err)
	}
	if err != nil {
		return m.errorf(op, err)
	}
	return nil
}

func (m *Message) errorf(op string, err error) error {
	return errtext.Errorf("curatorqueue: %s %s/%s: %w", op, m.q.path, m.name, err)
}

// remove deletes the message and its lock node together, pinned to the
// take's session. It is sent once: a transaction whose answer was lost is
// never sent again (connection.Client.Multi), and a lock node it may have
// left is deleted by czxid (lockcore.Hold.End). Curator deletes the
// message, then its lock: one transaction leaves no moment in which a
// consumed message is unlocked.
func (m *Message) remove(ctx context.Context, a lockcore.Acquired) error {
	_, err := m.q.client.Multi(connx.Pin(ctx, a.Session),
		&zk.DeleteRequest{Path: path.Join(m.q.path, m.name), Version: -1},
		&zk.DeleteRequest{Path: a.Path, Version: -1})
	if err != nil && !connx.Of(m.q.client).Live(a.Session) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		return errtext.Errorf("%w (%w)", connection.ErrSessionLost, err)
	}
	return err
}
