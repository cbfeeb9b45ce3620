package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// churn is the fixture of the contended fault tests: participants that
// take and release one lock in a loop while the test makes faults, and
// once the faults are over (settle) must each go on taking the lock — a
// waiter that missed the deletion of the node it waits on would wait for
// ever, and every participant behind it with it.
type churn struct {
	t   *testing.T
	ctx context.Context
	// lenient counts a Lock that fails while the faults last (lockErrs)
	// and tries again; otherwise a failed Lock fails the test.
	lenient bool
	// unlockOK says which errors of Unlock the faults may cause.
	unlockOK func(error) bool

	stop, clean atomic.Bool    // the participants end; the faults are over
	after       []atomic.Int32 // locks of each participant since clean
	lockErrs    atomic.Int32
	wg          sync.WaitGroup
	mu          sync.Mutex
	errs        []error
}

// newChurn returns the fixture for n participants; Unlock may fail with
// errLockLost only.
func newChurn(t *testing.T, ctx context.Context, n int) *churn {
	return &churn{t: t, ctx: ctx, after: make([]atomic.Int32, n),
		unlockOK: func(err error) bool { return errors.Is(err, errLockLost) }}
}

// lostOrUnknown lets Unlock fail with a lost hold or a lost answer.
func lostOrUnknown(err error) bool {
	return errors.Is(err, errLockLost) || errors.Is(err, connection.ErrOutcomeUnknown)
}

// fail records a participant's failure, reported by finish.
func (c *churn) fail(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

// run starts participant i on m, which locks, calls held (an error ends
// the participant with it), and unlocks, until finish.
func (c *churn) run(i int, m *testLock, held func() error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for !c.stop.Load() {
			lctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
			err := m.Lock(lctx)
			cancel()
			switch {
			case err != nil && c.lenient && !c.clean.Load():
				c.lockErrs.Add(1)
				continue
			case err != nil && c.lenient:
				c.fail(fmt.Errorf("participant %d: Lock after the faults: %w", i, err))
				return
			case err != nil:
				c.fail(fmt.Errorf("participant %d: Lock: %w", i, err))
				return
			}
			if c.clean.Load() {
				c.after[i].Add(1)
			}
			if held != nil {
				if err := held(); err != nil {
					c.fail(err)
					return
				}
			}
			if err := m.Unlock(c.ctx); err != nil && !c.unlockOK(err) {
				c.fail(fmt.Errorf("participant %d: Unlock: %w", i, err))
				return
			}
		}
	}()
}

// settle says the faults are over, and waits until every participant has
// locked three times since.
func (c *churn) settle(what string) {
	c.t.Helper()
	c.clean.Store(true)
	zktest.Eventually(c.t, 60*time.Second, "every participant locks after the "+what, func() error {
		for i := range c.after {
			if n := c.after[i].Load(); n < 3 {
				return fmt.Errorf("participant %d locked %d times since", i, n)
			}
		}
		return nil
	})
}

// finish stops the participants and reports their failures.
func (c *churn) finish() {
	c.t.Helper()
	c.stop.Store(true)
	c.wg.Wait()
	for _, err := range c.errs {
		c.t.Error(err)
	}
}

// holdLog records, for the exclusion check of a contended run, the Done
// of every participant between its Lock and its Unlock.
type holdLog struct {
	mu       sync.Mutex
	holding  map[*testLock]<-chan struct{}
	overlaps []string
	locks    int
}

func (l *holdLog) locked(m *testLock, who string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.locks++
	for other, done := range l.holding {
		if !closed(done) {
			l.overlaps = append(l.overlaps, fmt.Sprintf("%s (%s) locked while %s's Done was open", who, m.Node(), other.Node()))
		}
	}
	if !closed(m.Done()) {
		l.holding[m] = m.Done()
	}
}

func (l *holdLog) unlocking(m *testLock) {
	l.mu.Lock()
	delete(l.holding, m)
	l.mu.Unlock()
}

// overlapped fails t with the locks that overlapped another's open Done.
func (l *holdLog) overlapped(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.overlaps) > 0 {
		t.Errorf("%d of %d locks overlapped another's open Done, e.g. %v", len(l.overlaps), l.locks, l.overlaps[:min(3, len(l.overlaps))])
	}
}
