package shared

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// setGuarded is Set fenced by o's guard: a set of any version, or a
// create where the node does not exist, each in one transaction with the
// guard. Not sent again after a lost answer.
func (v *Value[T]) setGuarded(ctx context.Context, data []byte, o writeOptions) (Versioned[T], error) {
	for {
		res, err := v.client.Multi(ctx, o.ops(&zk.SetDataRequest{Path: v.path, Data: data, Version: -1})...)
		if err == nil {
			st := res[0].Stat
			return Versioned[T]{Version: st.Version, Czxid: st.Czxid}, nil
		}
		if errors.Is(err, connection.ErrGuardFailed) || errors.Is(err, connection.ErrOutcomeUnknown) || !errors.Is(opErr(res, 0), zk.ErrNoNode) {
			return Versioned[T]{}, err
		}
		err = createGuarded(ctx, v.client, v.path, data, o)
		if err == nil {
			return Versioned[T]{Version: 0}, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) || errors.Is(err, connection.ErrOutcomeUnknown) {
			return Versioned[T]{}, err
		}
		// Another participant created it in between: set it.
	}
}

// trySetGuarded is trySetOnce fenced by o's guard.
func (v *Value[T]) trySetGuarded(ctx context.Context, prev Versioned[T], data []byte, o writeOptions) (Versioned[T], error) {
	if prev.Version == -1 {
		err := createGuarded(ctx, v.client, v.path, data, o)
		switch {
		case err == nil:
			return Versioned[T]{Version: 0}, nil
		case errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, connection.ErrOutcomeUnknown) && !errors.Is(err, connection.ErrGuardFailed):
			return Versioned[T]{}, ErrChanged
		}
		return Versioned[T]{}, err
	}
	res, err := v.client.Multi(ctx, o.ops(&zk.SetDataRequest{Path: v.path, Data: data, Version: prev.Version})...)
	switch {
	case err == nil:
		st := res[0].Stat
		return Versioned[T]{Version: st.Version, Czxid: st.Czxid}, nil
	case errors.Is(err, connection.ErrGuardFailed), errors.Is(err, connection.ErrOutcomeUnknown):
		return Versioned[T]{}, err
	case errors.Is(opErr(res, 0), zk.ErrBadVersion), errors.Is(opErr(res, 0), zk.ErrNoNode):
		return Versioned[T]{}, ErrChanged
	}
	return Versioned[T]{}, err
}

// createGuarded creates the persistent node at path holding data in one
// transaction with o's guard. Missing parents are made first, as
// containers, outside the transaction: they hold no value, and the server
// deletes a container once its last child is gone.
func createGuarded(ctx context.Context, c *connection.Client, p string, data []byte, o writeOptions) error {
	create := &zk.CreateRequest{Path: p, Data: data, Flags: 0}
	for range 2 {
		res, err := c.Multi(ctx, o.ops(create)...)
		if err == nil || errors.Is(err, connection.ErrGuardFailed) || errors.Is(err, connection.ErrOutcomeUnknown) || !errors.Is(opErr(res, 0), zk.ErrNoNode) {
			return err
		}
		_, err = c.Create(ctx, path.Dir(p), nil, connection.Container, connection.WithParents())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, connection.ErrOutcomeUnknown) {
			return err
		}
	}
	return errtext.Errorf("%w: the parent of %s is deleted as soon as it is made", zk.ErrNoNode, p)
}
