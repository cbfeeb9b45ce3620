package main

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// reader reads what inspect shows. With watch set (--watch), every
// listing also sets a child watch, and a missing node a creation watch,
// so that any change to what was read wakes the watcher. The watches are
// the client's shared ones (connection.Watch): at most one per node and
// kind, and no goroutine each.
type reader struct {
	client *connection.Client
	watch  bool

	mu      sync.Mutex
	watches []*connection.Watch
}

func (r *reader) add(w *connection.Watch) {
	if w == nil {
		return
	}
	r.mu.Lock()
	r.watches = append(r.watches, w)
	r.mu.Unlock()
}

func (r *reader) children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	if !r.watch {
		return r.client.Children(ctx, p)
	}
	kids, st, w, err := r.client.ChildrenWatch(ctx, p)
	if err == nil {
		r.add(w)
	}
	return kids, st, err
}

// exists reports whether p exists; in watch mode a missing p is watched
// for its creation.
func (r *reader) exists(ctx context.Context, p string) (bool, error) {
	if !r.watch {
		ok, _, err := r.client.Exists(ctx, p)
		return ok, err
	}
	ok, _, w, err := r.client.ExistsWatch(ctx, p)
	if err == nil {
		r.add(w)
	}
	return ok, err
}

// get reads a node's data. Only the semaphore's count is followed in
// watch mode (watched): contenders are followed by their directory's
// child watch.
func (r *reader) get(ctx context.Context, p string, watched bool) ([]byte, *zk.Stat, error) {
	if !r.watch || !watched {
		return r.client.Get(ctx, p)
	}
	data, st, w, err := r.client.GetWatch(ctx, p)
	if err == nil {
		r.add(w)
	}
	if errors.Is(err, zk.ErrNoNode) {
		_, _ = r.exists(ctx, p) // follow its creation
	}
	return data, st, err
}
