package lockcore

import (
	"context"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// AfterFunc arranges to call f once ctx is done, and returns a function
// that stops the call, as context.AfterFunc does. A hold's context has a
// method of that name which calls f in the goroutine that ends the hold,
// at that moment, before the hold's Done closes: whoever sees Done closed
// sees what f did. AfterFunc uses it when ctx has it; any other context
// gets context.AfterFunc, which calls f a moment later in a goroutine of
// its own.
func AfterFunc(ctx context.Context, f func()) (stop func() bool) {
	if h, ok := ctx.(interface{ AfterFunc(func()) func() bool }); ok {
		return h.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}

// AnyLost is one lost signal for several holds: its Context is cancelled,
// and Done closed, when the first of them ends — with that hold's cause —
// or at Stop. It watches each hold through AfterFunc, so with holds'
// contexts it starts no goroutine, and it ends in the goroutine that ends
// the hold, at that moment.
type AnyLost struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	onLost func(cause error)
	once   sync.Once // the first of a loss and Stop

	mu      sync.Mutex
	stops   []func() bool
	stopped bool
}

// NewAnyLost returns an AnyLost of no holds yet. If onLost is not nil, it
// is called once, with the cause, when the first hold ends before Stop,
// right after Context is cancelled and in the same goroutine: it must not
// block, nor call into the lock whose hold ended.
func NewAnyLost(onLost func(cause error)) *AnyLost {
	a := &AnyLost{onLost: onLost}
	a.ctx, a.cancel = context.WithCancelCause(context.Background())
	return a
}

// Add watches one more hold, whose context is ctx: if it ends first,
// Context's cause wraps cause (made in advance, it says which hold; nil
// when the hold's own cause says enough) and the hold's own cause (why it
// ended), read from the hold without asking the lock anything. A hold that has already ended counts at once (or a
// moment later: see AfterFunc). After Stop, Add watches nothing.
func (a *AnyLost) Add(ctx context.Context, cause error) {
	stop := AfterFunc(ctx, func() { a.end(withHoldCause(cause, ctx), true) })
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		stop()
		return
	}
	a.stops = append(a.stops, stop)
}

// withHoldCause is cause wrapping why the hold of ctx ended, when it
// says: a hold's context tells its hooks the cause it ends with before
// its cause is set.
func withHoldCause(cause error, ctx context.Context) error {
	var why error
	if h, ok := ctx.(interface{ ending() error }); ok {
		why = h.ending()
	} else {
		why = context.Cause(ctx)
	}
	switch {
	case why == nil:
		return cause
	case cause == nil:
		return why
	}
	return errtext.Errorf("%w: %w", cause, why)
}

func (a *AnyLost) end(cause error, lost bool) {
	a.once.Do(func() {
		a.cancel(cause)
		if lost && a.onLost != nil {
			a.onLost(cause)
		}
	})
}

// Done is closed when one of the holds has ended, or at Stop.
func (a *AnyLost) Done() <-chan struct{} { return a.ctx.Done() }

// Context is cancelled when Done closes: its cause is the first ended
// hold's, or Stop's.
func (a *AnyLost) Context() context.Context { return a.ctx }

// Stop cancels Context with why, unless a hold ended first, and then stops
// watching the holds: Done is closed before Stop lets go of anything, so
// a caller that releases the holds after Stop releases them with Done
// already closed. Stop may be called more than once.
func (a *AnyLost) Stop(why error) {
	a.end(why, false)
	a.mu.Lock()
	stops := a.stops
	a.stops, a.stopped = nil, true
	a.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
