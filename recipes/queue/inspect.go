package queue

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Entry is one item in the queue as ZooKeeper shows it.
type Entry struct {
	Name     string // "entry-<priority>-<sequence>"
	Priority int
	Size     int    // bytes of data
	Taken    bool   // a worker has it
	Taker    []byte // who has it: this library's worker's WithData; a Kazoo worker's id
	Session  int64  // the taker's session, when taken
}

// Entries lists the items in queue order, taken ones included. Items that
// vanish while being read are left out; a queue never used has none.
func (q *Queue) Entries(ctx context.Context) ([]Entry, error) {
	if q.c.Closed() {
		return nil, q.errorf("entries", ErrClosed)
	}
	names, _, err := q.client.Children(ctx, q.entries)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, q.errorf("entries", err)
	}
	var out []Entry
	for _, e := range sortEntries(names) {
		_, st, err := q.client.Get(ctx, path.Join(q.entries, e.name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, q.errorf("entries", err)
		}
		ent := Entry{Name: e.name, Priority: e.priority, Size: int(st.DataLength)}
		taker, tst, err := q.client.Get(ctx, path.Join(q.taken, e.name))
		switch {
		case err == nil:
			ent.Taken, ent.Taker, ent.Session = true, takerOf(taker), tst.EphemeralOwner
		case !errors.Is(err, zk.ErrNoNode):
			return nil, q.errorf("entries", err)
		}
		out = append(out, ent)
	}
	return out, nil
}

// Len returns the number of items in the queue, taken ones included
// (Kazoo's len): the children of the entries directory that are items,
// not any other node an operator may have left there.
func (q *Queue) Len(ctx context.Context) (int, error) {
	if q.c.Closed() {
		return 0, q.errorf("len", ErrClosed)
	}
	names, _, err := q.client.Children(ctx, q.entries)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, q.errorf("len", err)
	}
	n := 0
	for _, name := range names {
		if _, ok := parseEntry(name); ok {
			n++
		}
	}
	return n, nil
}

// Idle returns the number of Go workers waiting in line for an item.
func (q *Queue) Idle(ctx context.Context) (int, error) {
	if q.c.Closed() {
		return 0, q.errorf("idle", ErrClosed)
	}
	ps, err := lockcore.Participants(ctx, q.client, q.line.Dir, layout.MutexKinds)
	if err != nil {
		return 0, q.errorf("idle", err)
	}
	return len(ps), nil
}
