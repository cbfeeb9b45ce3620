package queue

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// placed checks the sequence number the entries directory gave the entry
// Put made at created, and withdraws the entry if the number does not
// place it in order.
//
// Items of one priority are ordered by that number, which ZooKeeper gives
// once per directory up to 2147483646, in order of creation (a put counts
// one; a done, a delete, does not). At the limit (layout.Exhausted)
// ZooKeeper 3.6+ number every later entry 2147483647 — a second put of a
// priority then meets the name of the first and is refused with
// NodeExists, which connection reports as ErrSequenceExhausted — and give
// puts in flight behind it negative numbers, which sort ahead of every
// item of their priority, here and in Kazoo. The first entry numbered
// 2147483647 would sit in order, but refusing every entry at the limit
// keeps one rule with the locks: the directory must be made again.
//
// The withdraw is a take and a done in one transaction: it makes the
// entry's taken node, as a worker does to take it, deletes it, and deletes
// the entry. If a worker took the item first, the item was delivered
// (ahead of its turn, if its number is negative), and Put reports
// success.
func (q *Queue) placed(ctx context.Context, created string) error {
	e, ok := parseEntry(path.Base(created))
	if !ok || !layout.Exhausted(e.seq) {
		return nil
	}
	exhausted := errtext.Errorf("%w (%s numbered an item %s)", connection.ErrSequenceExhausted,
		q.entries, strings.TrimPrefix(e.name, entryName(e.priority)))
	sess := q.client.Session()
	if sess == nil {
		return errors.Join(exhausted, errtext.Errorf("the item is in the queue, out of its order: %w", connection.ErrSessionLost))
	}
	// Not given up when ctx ends: the item would stay out of its order.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*lockcore.CleanupTimeout(sess))
	defer cancel()
	tpath := path.Join(q.taken, e.name)
	res, err := q.client.Multi(ctx,
		&zk.CreateRequest{Path: tpath, Flags: int32(connection.Ephemeral)},
		&zk.DeleteRequest{Path: tpath, Version: -1},
		&zk.DeleteRequest{Path: created, Version: -1})
	switch {
	case err == nil:
		return exhausted // withdrawn: never delivered
	case len(res) == 3 && errors.Is(res[0].Error, zk.ErrNodeExists):
		return nil // a worker took it: delivered
	case len(res) == 3 && errors.Is(res[2].Error, zk.ErrNoNode):
		return exhausted // a worker took it and was done with it already
	}
	return errors.Join(exhausted, errtext.Errorf("the item may still be in the queue, out of its order: withdraw: %w", err))
}
