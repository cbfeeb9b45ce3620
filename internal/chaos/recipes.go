package chaos

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
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
}

// Recipes is every exclusive recipe the run knows, by the name a
// participant process is started with.
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
