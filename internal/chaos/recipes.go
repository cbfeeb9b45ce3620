package chaos

import (
	"context"
	"errors"
	"fmt"

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
// fencing token.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Done() <-chan struct{}
	Token() int64
}

// Recipe makes a participant's Locker of one recipe.
type Recipe struct {
	Name string
	New  func(c *connection.Client, path string) (Locker, error)
	// Setup, when not nil, prepares path before the participants start.
	Setup func(ctx context.Context, c *connection.Client, path string) error
	// Leftovers, when not nil, lists what must be gone from path once
	// every participant is idle, and says what is missing that must be
	// there; nil means path's children.
	Leftovers func(ctx context.Context, c *connection.Client, path string) (left, missing []string, err error)
}

// Recipes is every exclusive hold the run knows, by the name a
// participant process is started with: the mutex, the naive lock, the
// write side of the read/write lock, a semaphore of one lease, a leader's
// term, and a work queue's one item.
var Recipes = []Recipe{
	{Name: "mutex", New: func(c *connection.Client, path string) (Locker, error) { return mutex.New(c, path) }},
	{Name: "naive", New: func(c *connection.Client, path string) (Locker, error) { return naive.New(c, path) }},
	{Name: "rwlock-write", New: func(c *connection.Client, path string) (Locker, error) {
		rw, err := rwlock.New(c, path)
		if err != nil {
			return nil, err
		}
		return rw.WriteLock(), nil
	}},
	{Name: "semaphore-1", New: func(c *connection.Client, path string) (Locker, error) {
		s, err := semaphore.New(c, path, 1)
		return &leaseLocker{sem: s}, err
	}},
	{Name: "election", New: func(c *connection.Client, path string) (Locker, error) {
		e, err := election.New(c, path, "chaos")
		return &termLocker{e: e}, err
	}},
	{Name: "queue-1", New: func(c *connection.Client, path string) (Locker, error) {
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

// leaseLocker is a semaphore of one lease as a lock.
type leaseLocker struct {
	sem   *semaphore.Semaphore
	lease *semaphore.Lease
}

func (l *leaseLocker) Lock(ctx context.Context) error {
	got, err := l.sem.Acquire(ctx, 1)
	if err == nil {
		l.lease = got[0]
	}
	return err
}

func (l *leaseLocker) Unlock(ctx context.Context) error {
	if l.lease == nil {
		return semaphore.ErrReleased
	}
	err := l.lease.Release(ctx)
	if err == nil || errors.Is(err, connection.ErrSessionLost) || errors.Is(err, semaphore.ErrReleased) {
		l.lease = nil
	}
	return err
}

func (l *leaseLocker) Done() <-chan struct{} { return l.lease.Done() }
func (l *leaseLocker) Token() int64          { return l.lease.Token() }

// termLocker is a leader's term as a lock: Campaign takes it, Resign
// gives it up.
type termLocker struct {
	e    *election.Election
	term *election.Term
}

func (l *termLocker) Lock(ctx context.Context) error {
	t, err := l.e.Campaign(ctx)
	if err == nil {
		l.term = t
	}
	return err
}

func (l *termLocker) Unlock(ctx context.Context) error {
	if l.term == nil {
		return election.ErrResigned
	}
	err := l.term.Resign(ctx)
	if err == nil || errors.Is(err, connection.ErrSessionLost) || errors.Is(err, election.ErrResigned) {
		l.term = nil
	}
	return err
}

func (l *termLocker) Done() <-chan struct{} { return l.term.Done() }
func (l *termLocker) Token() int64          { return l.term.Token() }

// itemLocker is a work queue of one item as a lock: Take takes it,
// Release puts it back. At most one take of the item may be trusted at a
// time, which is the lock's promise; the take's token is the fencing
// token. The item is put by Setup and never done, so it must still be in
// the queue at the end.
type itemLocker struct {
	q    *queue.Queue
	item *queue.Item
}

func (l *itemLocker) Lock(ctx context.Context) error {
	it, err := l.q.Take(ctx)
	if err == nil {
		l.item = it
	}
	return err
}

func (l *itemLocker) Unlock(ctx context.Context) error {
	if l.item == nil {
		return queue.ErrFinished
	}
	err := l.item.Release(ctx)
	if err == nil || errors.Is(err, connection.ErrSessionLost) || errors.Is(err, queue.ErrFinished) {
		l.item = nil
	}
	return err
}

func (l *itemLocker) Done() <-chan struct{} { return l.item.Lost() }
func (l *itemLocker) Token() int64          { return l.item.Token() }

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
