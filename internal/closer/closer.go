// Package closer is what a recipe value's Close ends: the calls in
// progress through the value, and the holds taken through it and not yet
// consumed or released (a work queue's items, a Curator queue's messages
// held under its lock path).
package closer

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Closer tracks a value's calls and holds of type T until Close.
type Closer[T comparable] struct {
	closing     context.Context // cancelled by Close: it ends the calls in progress
	stopClosing context.CancelFunc
	release     func(context.Context, T) error
	timeout     func(T) time.Duration
	ended       func(error) bool
	closedErr   error

	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
	held   map[T]struct{}
}

// New returns a Closer whose holds are let go with release, bounded by
// timeout(h) when one is taken after Close began; Close leaves out of its
// error the release errors for which ended reports true (the hold had
// ended already). closedErr is the package's error for a call after or
// ended by Close.
func New[T comparable](release func(context.Context, T) error, timeout func(T) time.Duration, ended func(error) bool, closedErr error) *Closer[T] {
	c := &Closer[T]{release: release, timeout: timeout, ended: ended, closedErr: closedErr, held: map[T]struct{}{}}
	c.closing, c.stopClosing = context.WithCancel(context.Background())
	return c
}

// Enter begins a call: its context is ctx, also cancelled by Close, and
// leave ends it. After Close it fails with closedErr.
func (c *Closer[T]) Enter(ctx context.Context) (cctx context.Context, leave func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, c.closedErr
	}
	c.calls.Add(1)
	cctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.closing, cancel)
	return cctx, func() {
		stop()
		cancel()
		c.calls.Done()
	}, nil
}

// CallErr is the error of a call on ctx that failed with err: closedErr
// when Close ended it, not its caller.
func (c *Closer[T]) CallErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && c.closing.Err() != nil {
		return c.closedErr
	}
	return err
}

// Track records h until Untrack; one taken after Close began is released
// at once, and Track reports false.
func (c *Closer[T]) Track(h T) bool {
	c.mu.Lock()
	if !c.closed {
		c.held[h] = struct{}{}
		c.mu.Unlock()
		return true
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout(h))
	defer cancel()
	_ = c.release(ctx, h)
	return false
}

// Untrack forgets h: consumed or released.
func (c *Closer[T]) Untrack(h T) {
	c.mu.Lock()
	delete(c.held, h)
	c.mu.Unlock()
}

// Closed reports whether Close began.
func (c *Closer[T]) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close ends the calls in progress and waits for them to return, as long
// as ctx allows (if ctx ends first, the error joins wrap(ctx.Err())), then
// releases every hold still tracked; the error joins the releases'
// errors. A call in flight that cannot be abandoned (a take's create)
// keeps its own bound; a hold it takes after Close began is released by
// Track. A second Close returns nil.
func (c *Closer[T]) Close(ctx context.Context, wrap func(error) error) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.stopClosing()
	var errs []error
	returned := make(chan struct{})
	go func() {
		c.calls.Wait()
		close(returned)
	}()
	select {
	case <-returned:
	case <-ctx.Done():
		errs = append(errs, wrap(ctx.Err()))
	}
	c.mu.Lock()
	held := make([]T, 0, len(c.held))
	for h := range c.held {
		held = append(held, h)
	}
	c.mu.Unlock()
	for _, h := range held {
		if err := c.release(ctx, h); err != nil && !c.ended(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
