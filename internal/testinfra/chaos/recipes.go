package chaos

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// Locker is what the run needs of a recipe: something that is held
// exclusively, says when the hold can no longer be trusted and gives a
// fencing token. One Locker is one participant: several of them, of one
// recipe or of several, share a client in a participant process.
type Locker interface {
	Lock(ctx context.Context) error
	// Unlock releases the hold: under the library's contract the hold is
	// over when it returns (Done closed), whatever the error.
	Unlock(ctx context.Context) error
	Done() <-chan struct{}
	// Context is the hold's: its AfterFunc method runs a function
	// synchronously the moment the hold ends, before Done closes.
	Context() context.Context
	Token() int64
	// Node is the path of the hold's node, while it holds.
	Node() string
	// Over checks, after Unlock returned, that the recipe itself says
	// nothing is held any more (Held false, or a second release refused
	// as already done), without sending anything.
	Over() error
}

// heldLocker is a recipe whose participant says whether it holds, and
// with which node: the locks built on lockcore.Holder.
type heldLocker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Done() <-chan struct{}
	Context() context.Context
	Token() int64
	Held() bool
	Node() string
}

// holderLocker adapts a heldLocker: nothing is held when Held is false.
// Its Unlock alone can return with the hold kept, when its context ended
// before it began (nothing sent); Node says which node the hold must then
// still have.
type holderLocker struct{ heldLocker }

func (l holderLocker) Over() error {
	if l.Held() {
		return errors.New("Held() is still true")
	}
	return nil
}

// Recipe makes a participant's Locker of one recipe.
type Recipe struct {
	Name string
	// New makes participant id's Locker on the client c shares with the
	// other participants of its process.
	New func(c *connection.Client, path string, id int) (Locker, error)
	// Setup, when not nil, prepares path before the participants start.
	Setup func(ctx context.Context, c *connection.Client, path string) error
	// Leftovers, when not nil, lists what must be gone from path once
	// every participant is idle, and says what is missing that must be
	// there; nil means path's children.
	Leftovers func(ctx context.Context, c *connection.Client, path string) (left, missing []string, err error)
}

// Recipes is every exclusive hold the run knows, by the name a
// participant is started with: the mutex, the naive lock, the write side
// of the read/write lock, a semaphore of one lease, a leader's term, and
// a work queue's one item.
var Recipes = []Recipe{
	{Name: "mutex", New: func(c *connection.Client, path string, _ int) (Locker, error) {
		m, err := mutex.New(c, path)
		return holderLocker{m}, err
	}},
	{Name: "naive", New: func(c *connection.Client, path string, _ int) (Locker, error) {
		l, err := naive.New(c, path)
		return holderLocker{naiveLocker{l}}, err
	}},
	{Name: "rwlock-write", New: func(c *connection.Client, path string, _ int) (Locker, error) {
		rw, err := rwlock.New(c, path)
		if err != nil {
			return nil, err
		}
		return holderLocker{rw.WriteLock()}, nil
	}},
	{Name: "semaphore-1", New: func(c *connection.Client, path string, _ int) (Locker, error) {
		s, err := semaphore.New(c, path, 1)
		return &leaseLocker{sem: s}, err
	}},
	{Name: "election", New: func(c *connection.Client, path string, id int) (Locker, error) {
		e, err := election.New(c, path, fmt.Sprintf("chaos-%d", id))
		return &termLocker{e: e}, err
	}},
	{Name: "queue-1", New: func(c *connection.Client, path string, _ int) (Locker, error) {
		q, err := queue.New(c, path)
		return &itemLocker{q: q}, err
	}, Setup: putOneItem, Leftovers: queueLeftovers},
}

// RecipeNames lists the names of Recipes.
func RecipeNames() []string {
	var names []string
	for _, r := range Recipes {
		names = append(names, r.Name)
	}
	return names
}

func recipeNamed(name string) (Recipe, error) {
	for _, r := range Recipes {
		if r.Name == name {
			return r, nil
		}
	}
	return Recipe{}, fmt.Errorf("chaos: no recipe %q (known: %v)", name, RecipeNames())
}

// naiveLocker is a naive lock, whose node is its path.
type naiveLocker struct{ l *naive.Lock }

func (n naiveLocker) Lock(ctx context.Context) error   { return n.l.Lock(ctx) }
func (n naiveLocker) Unlock(ctx context.Context) error { return n.l.Unlock(ctx) }
func (n naiveLocker) Done() <-chan struct{}            { return n.l.Done() }
func (n naiveLocker) Context() context.Context         { return n.l.Context() }
func (n naiveLocker) Token() int64                     { return n.l.Token() }
func (n naiveLocker) Held() bool                       { return n.l.Held() }
func (n naiveLocker) Node() string                     { return n.l.Path() }

// leaseLocker is a semaphore of one lease as a lock.
type leaseLocker struct {
	sem         *semaphore.Semaphore
	lease, last *semaphore.Lease
}

func (l *leaseLocker) Lock(ctx context.Context) error {
	got, err := l.sem.Acquire(ctx, 1)
	if err == nil {
		l.lease = got[0]
	}
	return err
}

// Unlock releases the lease: it is over whatever the error.
func (l *leaseLocker) Unlock(ctx context.Context) error {
	if l.lease == nil {
		return semaphore.ErrReleased
	}
	l.last, l.lease = l.lease, nil
	return l.last.Release(ctx)
}

// Over: a second Release says it was released (a lost lease's first
// Release says lost, and marks it released too).
func (l *leaseLocker) Over() error {
	if l.last == nil {
		return nil
	}
	if err := l.last.Release(context.Background()); !errors.Is(err, semaphore.ErrReleased) {
		return fmt.Errorf("a second Release returned %v", err)
	}
	return nil
}

func (l *leaseLocker) Done() <-chan struct{}    { return l.lease.Done() }
func (l *leaseLocker) Context() context.Context { return l.lease.Context() }
func (l *leaseLocker) Token() int64             { return l.lease.Token() }
func (l *leaseLocker) Node() string             { return l.lease.Node() }

// termLocker is a leader's term as a lock: Campaign takes it, Resign
// gives it up.
type termLocker struct {
	e          *election.Election
	term, last *election.Term
}

func (l *termLocker) Lock(ctx context.Context) error {
	t, err := l.e.Campaign(ctx)
	if err == nil {
		l.term = t
	}
	return err
}

// Unlock resigns: the term is over whatever the error.
func (l *termLocker) Unlock(ctx context.Context) error {
	if l.term == nil {
		return election.ErrResigned
	}
	l.last, l.term = l.term, nil
	return l.last.Resign(ctx)
}

// Over: a second Resign says resigned, or lost (a term lost before its
// Resign keeps saying so).
func (l *termLocker) Over() error {
	if l.last == nil {
		return nil
	}
	if err := l.last.Resign(context.Background()); !errors.Is(err, election.ErrResigned) && !errors.Is(err, election.ErrTermLost) {
		return fmt.Errorf("a second Resign returned %v", err)
	}
	return nil
}

func (l *termLocker) Done() <-chan struct{}    { return l.term.Done() }
func (l *termLocker) Context() context.Context { return l.term.Context() }
func (l *termLocker) Token() int64             { return l.term.Token() }
func (l *termLocker) Node() string             { return l.term.Node() }

// itemLocker is a work queue of one item as a lock: Take takes it,
// Release puts it back. At most one take of the item may be trusted at a
// time, which is the lock's promise: an overlap is the item held twice.
// The take's token is the fencing token. The item is put by Setup and
// never done, so it must still be in the queue at the end.
type itemLocker struct {
	q          *queue.Queue
	item, last *queue.Item
}

func (l *itemLocker) Lock(ctx context.Context) error {
	it, err := l.q.Take(ctx)
	if err == nil {
		l.item = it
	}
	return err
}

// Unlock puts the item back: the take is over whatever the error.
func (l *itemLocker) Unlock(ctx context.Context) error {
	if l.item == nil {
		return queue.ErrFinished
	}
	l.last, l.item = l.item, nil
	return l.last.Release(ctx)
}

// Over: a second Release says finished.
func (l *itemLocker) Over() error {
	if l.last == nil {
		return nil
	}
	if err := l.last.Release(context.Background()); !errors.Is(err, queue.ErrFinished) {
		return fmt.Errorf("a second Release returned %v", err)
	}
	return nil
}

func (l *itemLocker) Done() <-chan struct{}    { return l.item.Done() }
func (l *itemLocker) Context() context.Context { return l.item.Context() }
func (l *itemLocker) Token() int64             { return l.item.Token() }

// Node is the take's node: the item's name under the taken directory.
func (l *itemLocker) Node() string { return path.Join(l.q.Path(), "taken", l.item.Name()) }

// putOneItem puts the queue's one item.
func putOneItem(ctx context.Context, c *connection.Client, path string) error {
	q, err := queue.New(c, path)
	if err != nil {
		return err
	}
	return q.Put(ctx, []byte("the one item"))
}

// queueLeftovers: once everyone is idle no item is taken and no worker
// waits in line, and the one item is still in the queue, untaken.
func queueLeftovers(ctx context.Context, c *connection.Client, path string) (left, missing []string, err error) {
	q, err := queue.New(c, path)
	if err != nil {
		return nil, nil, err
	}
	for _, dir := range []string{"taken", "takers"} {
		kids, _, err := c.Children(ctx, path+"/"+dir)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, nil, err
		}
		for _, k := range kids {
			left = append(left, dir+"/"+k)
		}
	}
	entries, err := q.Entries(ctx)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case len(entries) == 0:
		missing = append(missing, "the item")
	case len(entries) > 1:
		for _, e := range entries[1:] {
			left = append(left, "entries/"+e.Name)
		}
	}
	return left, missing, nil
}
