package lockcore

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// firstListing is the listing sent right behind the create
// (CreateProtectedThen), on the same connection: it names our node when
// it was taken after the create applied.
type firstListing struct {
	sent     atomic.Bool   // the request went (then was called)
	done     chan struct{} // closed once answered
	children []string
	stat     *zk.Stat // the directory's
	err      error
}

// send is CreateProtectedThen's then: it must not block. The listing is
// answered through a callback (ChildrenThen): no goroutine of its own
// while the client has a session.
func (f *firstListing) send(ctx context.Context, c *connection.Client, dir string) {
	f.sent.Store(true)
	connx.Of(c).ChildrenThen(ctx, dir, func(children []string, stat *zk.Stat, err error) {
		f.children, f.stat, f.err = children, stat, err
		close(f.done)
	})
}

// names returns the listing and the directory's Stat if it was sent and
// names ours; nil otherwise, or when ctx ends first.
func (f *firstListing) names(ctx context.Context, ours string) ([]string, *zk.Stat) {
	if f == nil || !f.sent.Load() {
		return nil, nil
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, nil // await lists again, and fails with ctx's error
	}
	if f.err != nil || f.stat == nil || !slices.Contains(f.children, ours) {
		return nil, nil
	}
	return f.children, f.stat
}
