package curatorqueue

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Simple is a queue in the layout of Curator's SimpleDistributedQueue
// (and of ZooKeeper's own queue recipe): each item is a persistent
// sequential node <path>/qn-<seq> holding the item's bytes as they are.
// An item is taken by reading it and deleting it: whoever deletes it has
// it. Its methods are safe for concurrent use, and it owns nothing between
// calls (no Close).
type Simple struct {
	client *connection.Client
	path   string
}

// NewSimple returns the simple queue at path. Nothing is created until
// Offer or a take.
func NewSimple(c *connection.Client, p string) (*Simple, error) {
	if err := checkArgs(c, p); err != nil {
		return nil, err
	}
	return &Simple{client: c, path: p}, nil
}

func checkArgs(c *connection.Client, p string) error {
	if c == nil {
		return errtext.Errorf("curatorqueue: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(p); err != nil {
		return errtext.Errorf("curatorqueue: %w", err)
	}
	if p == "/" {
		return errtext.Errorf("curatorqueue: %w: the root cannot be a queue", connection.ErrInvalidPath)
	}
	return nil
}

// Path returns the queue's path.
func (s *Simple) Path() string { return s.path }

func (s *Simple) errorf(op string, err error) error {
	return errtext.Errorf("curatorqueue: %s %s: %w", op, s.path, err)
}

// Offer adds data at the end of the queue (Curator's offer), making the
// queue's path and missing parents first. The sequential create is not
// re-sent after a lost answer: if Offer fails with an error matching
// connection.ErrOutcomeUnknown, the item may or may not be in the queue.
func (s *Simple) Offer(ctx context.Context, data []byte) error {
	if _, err := s.client.Create(ctx, path.Join(s.path, simplePrefix), data, connection.PersistentSequential, connection.WithParents()); err != nil {
		return s.errorf("offer", err)
	}
	return nil
}

// Peek returns the data of the item at the head of the queue without
// taking it, or an error matching ErrEmpty (Curator's peek and element).
func (s *Simple) Peek(ctx context.Context) ([]byte, error) {
	names, _, err := s.client.Children(ctx, s.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, s.errorf("peek", err)
	}
	for _, name := range simpleOrder(names) {
		data, _, err := s.client.Get(ctx, path.Join(s.path, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // taken since the listing
		}
		if err != nil {
			return nil, s.errorf("peek", err)
		}
		return data, nil
	}
	return nil, s.errorf("peek", ErrEmpty)
}

// Poll takes the item at the head of the queue and returns its data, or
// an error matching ErrEmpty without waiting (Curator's poll and remove).
// If the delete that takes it was sent and not answered, Poll returns the
// data with an error matching ErrOutcomeUnknown: the item may still be in
// the queue (see ErrOutcomeUnknown).
func (s *Simple) Poll(ctx context.Context) ([]byte, error) {
	data, _, err := s.takeFirst(ctx, false)
	if err != nil {
		return data, s.errorf("poll", err)
	}
	return data, nil
}

// Take waits for an item and takes it, as Poll does, until ctx ends
// (Curator's take; its poll with a timeout is Take with a deadline).
func (s *Simple) Take(ctx context.Context) ([]byte, error) {
	for {
		data, changed, err := s.takeFirst(ctx, true)
		if err == nil || !errors.Is(err, ErrEmpty) {
			if err != nil {
				return data, s.errorf("take", err)
			}
			return data, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, s.errorf("take", ctx.Err())
		}
	}
}

// takeFirst lists the queue, with a watch if asked, and takes the first
// item it can: ErrEmpty when there is none, with the watch's channel.
func (s *Simple) takeFirst(ctx context.Context, watch bool) ([]byte, <-chan struct{}, error) {
	names, changed, err := list(ctx, s.client, s.path, watch)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range simpleOrder(names) {
		data, ok, err := remove(ctx, s.client, path.Join(s.path, name))
		if ok || err != nil {
			return data, nil, err
		}
	}
	return nil, changed, ErrEmpty
}

// list returns the queue's children and, if watch, a channel closed when
// they change. A queue whose path does not exist is made (as Curator's
// consumers make it), so that the watch is set on it.
func list(ctx context.Context, c *connection.Client, dir string, watch bool) ([]string, <-chan struct{}, error) {
	if !watch {
		names, _, err := c.Children(ctx, dir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil, nil
		}
		return names, nil, err
	}
	for {
		names, _, w, err := c.ChildrenWatch(ctx, dir)
		if errors.Is(err, zk.ErrNoNode) {
			if err := c.EnsurePath(ctx, dir); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		return names, w.Done(), nil
	}
}

// remove reads the item at p and deletes it at the version read: ok when
// this call deleted it, false when another consumer took it first. The
// delete is a transaction of one op, which is never re-sent after a lost
// answer (connection.Client.Multi): a retried delete that found the node
// gone could not tell our delete from another consumer's, and the item
// would be lost. An unanswered delete returns the data with an error
// matching ErrOutcomeUnknown.
func remove(ctx context.Context, c *connection.Client, p string) (data []byte, ok bool, err error) {
	data, stat, err := c.Get(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	_, err = c.Multi(ctx, &zk.DeleteRequest{Path: p, Version: stat.Version})
	switch {
	case err == nil:
		return data, true, nil
	case errors.Is(err, connection.ErrOutcomeUnknown):
		return data, false, errors.Join(ErrOutcomeUnknown, err)
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		return nil, false, nil
	}
	return nil, false, err
}
