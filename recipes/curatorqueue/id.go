package curatorqueue

import (
	"context"
	"errors"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Remove removes the messages of id from an id queue (Curator's
// DistributedIdQueue.remove) and returns how many it removed: each is
// taken as Take takes it — under its lock with a lock path, by delete
// without — and deleted unread, so one that a consumer holds is left to
// it. Ids are compared as Curator writes them in names ('/' and '|' as
// '_'). On a queue of another variant it returns an error matching
// ErrWrongKind.
func (q *Queue) Remove(ctx context.Context, id string) (int, error) {
	if q.kind != idKind {
		return 0, q.errorf("remove", errtext.Errorf("%w: Remove is an id queue's", ErrWrongKind))
	}
	if id == "" {
		return 0, q.errorf("remove", errtext.Errorf("empty id: %w", connection.ErrInvalidOption))
	}
	cctx, leave, err := q.c.Enter(ctx)
	if err != nil {
		return 0, q.errorf("remove", err)
	}
	defer leave()
	n, err := q.remove(cctx, fixID(id))
	if err != nil {
		return n, q.errorf("remove", q.c.CallErr(ctx, err))
	}
	return n, nil
}

func (q *Queue) remove(ctx context.Context, id string) (int, error) {
	names, _, err := list(ctx, q.client, q.path, false)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range order(q.kind, names) {
		if nid, _ := parseID(name); nid != id {
			continue
		}
		var m *Message
		for {
			if q.lockPath == "" {
				m, err = q.removeNow(ctx, name)
				if errors.Is(err, ErrCorrupt) {
					err = nil // removed all the same
				}
			} else {
				m, err = q.removeLocked(ctx, name)
			}
			again, rerr := lockcore.Restarting(ctx, err)
			if !again {
				err = rerr
				break
			}
		}
		if err != nil {
			return n, err
		}
		if m != nil {
			n++
		}
	}
	return n, nil
}

// removeLocked takes message name under its lock and consumes it.
func (q *Queue) removeLocked(ctx context.Context, name string) (*Message, error) {
	if err := q.ensure(ctx); err != nil {
		return nil, err
	}
	sess, err := q.client.WaitSession(ctx)
	if err != nil {
		return nil, err
	}
	m, _, err := q.claim(ctx, sess, name)
	if m == nil || err != nil {
		if errors.Is(err, ErrCorrupt) {
			return m, nil // claim consumed it
		}
		return m, err
	}
	return m, m.Consume(ctx)
}
