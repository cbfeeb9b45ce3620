package partition

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Share is the part of the set one member holds: an Item per item, each a
// held lock with its own lost signal and fencing token, and a Done that
// says the share must be given back.
type Share struct {
	p     *Partitioner
	items []*Item
	gen   uint64 // the membership it was split for
	give  *lockcore.AnyLost

	mu       sync.Mutex
	released bool
	done     chan struct{} // closed once released: the worker allocates again
}

// Item is one item of a share: a held lock, Kazoo's lock at
// "<path>/locks/<name>". Work on the item stops when Done closes.
type Item struct {
	// Name is the item.
	Name string
	// Token is the fencing token of the hold: the czxid of its lock node,
	// larger for every later holder of the item. Writes on the item's
	// behalf carry it, and the storage refuses a token lower than one it
	// has seen.
	Token int64
	// Node is the path of the hold's lock node.
	Node string
	hold *lockcore.Hold
}

// Done is closed when the item's hold can no longer be trusted (its
// session was lost, its connection suspended under the standard policy,
// its lock node deleted) or was released. The lock guarantees that no
// other member holds the item before it closes: stop writing to it then.
func (it *Item) Done() <-chan struct{} { return it.hold.Done() }

// Context is cancelled when Done closes; its cause is Err (ErrItemLost,
// ErrReleased).
func (it *Item) Context() context.Context { return it.hold.Context() }

// Err returns nil while the hold lasts, and then why Done closed, as
// Context's cause does: ErrReleased, or ErrItemLost and what happened
// (connection.ErrSuspended, connection.ErrSessionLost,
// connection.ErrNodeDeleted).
func (it *Item) Err() error { return it.hold.Cause() }

// Items returns the share's items, in the set's order.
func (s *Share) Items() []*Item { return slices.Clone(s.items) }

// Names returns the names of the share's items, sorted.
func (s *Share) Names() []string {
	out := make([]string, len(s.items))
	for i, it := range s.items {
		out[i] = it.Name
	}
	return out
}

// Item returns the share's item called name.
func (s *Share) Item(name string) (*Item, bool) {
	for _, it := range s.items {
		if it.Name == name {
			return it, true
		}
	}
	return nil, false
}

// Done is closed when the share must be given back: the party's members
// changed (ErrRebalance), one of its items was lost (that item's cause),
// or the Partitioner is closing (ErrClosed). The items other than a lost
// one are still held until Release: finish or stop their work, then call
// Release.
func (s *Share) Done() <-chan struct{} { return s.give.Done() }

// Err returns why Done closed, or nil.
func (s *Share) Err() error {
	if err := context.Cause(s.give.Context()); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// Release gives the share back: each item's hold ends (its Done closes)
// before its lock node's delete is sent. Whatever the answers, nothing is
// held afterwards: a delete not answered is finished in the background
// while its session lives. The Partitioner then allocates again. The
// error joins the items' release errors (an item lost before: its cause).
// Release is idempotent.
func (s *Share) Release(ctx context.Context) error {
	s.mu.Lock()
	if s.released {
		s.mu.Unlock()
		return nil
	}
	s.released = true
	s.mu.Unlock()
	s.give.Stop(ErrReleased)
	err := s.release(ctx)
	close(s.done)
	if err != nil {
		return errtext.Errorf("partition: release %s: %w", s.p.path, err)
	}
	return nil
}

func (s *Share) isReleased() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

// release ends every hold of the share.
func (s *Share) release(ctx context.Context) error {
	var errs []error
	for _, it := range s.items {
		if err := it.hold.End(ctx, s.p.releaseItem); err != nil {
			errs = append(errs, errtext.Errorf("%s: %w", it.Name, err))
		}
	}
	return errors.Join(errs...)
}
