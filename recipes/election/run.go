package election

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// RunOption configures Run. An option that does not apply makes Run
// return its error before it campaigns, as every option type of the
// library does.
type RunOption func(*runConfig) error

type runConfig struct {
	requeue bool
}

// WithRequeue makes Run campaign again after each term, as Curator's
// LeaderSelector.autoRequeue: after fn returns nil, and after a term that
// was lost. Run then returns only when ctx ends, fn fails while its term
// lasted, or the Election is closed.
func WithRequeue() RunOption {
	return func(c *runConfig) error {
		c.requeue = true
		return nil
	}
}

// Run campaigns, calls fn with the term while this candidate leads, and
// resigns the term when fn returns. fn's context is cancelled when the
// term ends (Done closes), with the term's cause (Term.Err: ErrTermLost
// and what happened), or when ctx ends; fn should return then, since
// another candidate may lead from that moment on. A cancelled context
// does not recall a write already on its way: fn should send term.Token()
// with its writes, so that the store can refuse a former leader's (see
// Term.Token). Without WithRequeue, Run returns fn's error, joined with
// the term's cause — an error matching ErrTermLost — if the term was lost
// while fn ran. A failed campaign returns its error (ctx's, when it ends
// first). Close ends Run: a campaign in progress, or the term fn runs
// under (resigned by Close), and Run returns an error matching ErrClosed,
// joined with fn's.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context, term *Term) error, opts ...RunOption) error {
	var cfg runConfig
	for _, o := range opts {
		if o == nil {
			return e.errorf("run", errtext.Errorf("nil option: %w", connection.ErrInvalidOption))
		}
		if err := o(&cfg); err != nil {
			return e.errorf("run", err)
		}
	}
	for {
		t, err := e.Campaign(ctx)
		if err != nil {
			return err
		}
		err, lost := t.run(ctx, fn)
		if e.isClosed() {
			// Close resigned the term (fn's context was cancelled with
			// ErrResigned) or it was lost meanwhile: either way Run is over.
			return errors.Join(e.errorf("run", ErrClosed), err)
		}
		switch {
		case !cfg.requeue:
			if lost != nil {
				return errors.Join(e.errorf("run", lost), err)
			}
			return err
		case ctx.Err() != nil:
			return errors.Join(e.errorf("run", ctx.Err()), err)
		case err != nil && lost == nil:
			return err
		}
	}
}

// run runs fn under the term and resigns after it; lost is the term's
// cause if it was lost first, nil otherwise.
func (t *Term) run(ctx context.Context, fn func(ctx context.Context, term *Term) error) (err error, lost error) {
	fctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(t.Context(), func() { cancel(context.Cause(t.Context())) })
	err = fn(fctx, t)
	stop()
	cancel(nil)
	rctx, rcancel := context.WithTimeout(context.Background(), resignTimeout(t))
	defer rcancel()
	rerr := t.Resign(rctx)
	if cause := t.Err(); errors.Is(cause, ErrPreempted) {
		return err, cause // gave way: campaign again, as after a loss
	}
	if errors.Is(rerr, ErrTermLost) {
		if cause := t.Err(); errors.Is(cause, ErrTermLost) {
			return err, cause
		}
		return err, rerr // resigned, and the session was lost before the delete's answer
	}
	if errors.Is(rerr, ErrResigned) && t.e.isClosed() {
		return err, nil // Close resigned it
	}
	if rerr != nil {
		// The term is over all the same, and its node is deleted in the
		// background while its session lives: report the failure.
		return errors.Join(err, rerr), nil
	}
	return err, nil
}

func resignTimeout(t *Term) time.Duration {
	return max(t.hold.Session.Timeout(), time.Second)
}
