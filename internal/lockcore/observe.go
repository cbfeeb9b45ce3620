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
	wctx, done := o.Wait(ctx, connection.Wait{Recipe: l.Recipe, Path: l.Dir, Participant: t.a.Path, Ahead: int(t.w.ahead)})
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

// observe tells the client's observer of the hold, named by cfg, and has
// it told of the hold's end by a hook of the hold's context (AfterFunc):
// a hold costs nothing more when nobody observes it.
func (h *Hold) observe(cfg HoldConfig) {
	if cfg.Recipe == "" || cfg.Unobserved {
		return
	}
	o := connx.Of(h.client).Observer()
	if o == nil || o.Hold == nil {
		return
	}
	ctx := cfg.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	done := o.Hold(ctx, connection.Hold{Recipe: cfg.Recipe, Path: cfg.Path, Participant: h.Path, Token: h.Token, SessionID: h.Session.ID()})
	if done == nil {
		return
	}
	at := time.Now()
	hc := h.ctx.(holdContext)
	hc.AfterFunc(func() {
		h.mu.Lock()
		cause, consumed := h.ending, h.consumed
		h.mu.Unlock()
		if cause == h.cfg.Released {
			cause = nil
		} else {
			consumed = false
		}
		done(connection.HoldDone{Cause: cause, Duration: time.Since(at), Consumed: consumed})
	})
}
