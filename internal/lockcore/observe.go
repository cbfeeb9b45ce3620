package lockcore

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// waitObs is a wait told to the client's observer (connection.Observer's
// Wait).
type waitObs struct {
	done func(connection.WaitDone)
	at   time.Time
}

// waitBegins tells the observer that the contender of t waits, and
// returns the context the wait goes on with (ctx, or the observer's
// context derived from it) and the wait to end, nil when nobody is told.
func (l *Lock) waitBegins(ctx context.Context, t *attempt) (context.Context, *waitObs) {
	if l.Recipe == "" {
		return ctx, nil
	}
	o := connx.Of(l.Client).Observer()
	if o == nil || o.Wait == nil {
		return ctx, nil
	}
	wctx, done := o.Wait(ctx, connection.Wait{Recipe: l.Recipe, Path: l.Path, Participant: t.a.Path, Ahead: int(t.w.ahead)})
	if wctx == nil {
		wctx = ctx
	}
	if done == nil {
		return wctx, nil
	}
	return wctx, &waitObs{done: done, at: time.Now()}
}

// end tells the observer how the wait ended, and returns err.
func (w *waitObs) end(err error) error {
	if w != nil {
		w.done(connection.WaitDone{Err: err, Duration: time.Since(w.at)})
	}
	return err
}

// holdObs is a hold told to the client's observer (connection.Observer's
// Hold).
type holdObs struct {
	done func(connection.HoldDone)
	at   time.Time
}

// holdBegins tells the observer of the hold h, and returns the hold to
// end, nil when nobody is told.
func holdBegins(h *Hold) *holdObs {
	if h.cfg.Recipe == "" {
		return nil
	}
	o := connx.Of(h.client).Observer()
	if o == nil || o.Hold == nil {
		return nil
	}
	ctx := h.cfg.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	done := o.Hold(ctx, connection.Hold{Recipe: h.cfg.Recipe, Path: h.cfg.Path, Participant: h.Path, Token: h.Token, SessionID: h.Session.ID()})
	if done == nil {
		return nil
	}
	return &holdObs{done: done, at: time.Now()}
}

// end tells the observer that the hold ended with cause: nil when it was
// released.
func (o *holdObs) end(cause, released error) {
	if o == nil {
		return
	}
	if cause == released {
		cause = nil
	}
	o.done(connection.HoldDone{Cause: cause, Duration: time.Since(o.at)})
}
