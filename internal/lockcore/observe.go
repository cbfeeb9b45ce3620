package lockcore

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// WaitObs is a wait told to the client's observer (connection.Observer's
// Wait); a nil *WaitObs is one nobody is told of, and ending it does
// nothing.
type WaitObs struct {
	done func(connection.WaitDone)
	at   time.Time
}

// BeginWait tells the observer of c, if it has a Wait function, that w
// begins, and returns the context the wait goes on with (ctx, or the
// observer's context derived from it) and the wait to end, nil when
// nobody is told.
func BeginWait(ctx context.Context, c *connection.Client, w connection.Wait) (context.Context, *WaitObs) {
	o := connx.Of(c).Observer()
	if o == nil || o.Wait == nil {
		return ctx, nil
	}
	wctx, done := o.Wait(ctx, w)
	if wctx == nil {
		wctx = ctx
	}
	if done == nil {
		return wctx, nil
	}
	return wctx, &WaitObs{done: done, at: time.Now()}
}

// End tells the observer how the wait ended, and returns err. Each wait
// is ended once: its owner calls End on one path out.
func (w *WaitObs) End(err error) error {
	if w != nil {
		w.done(connection.WaitDone{Err: err, Duration: time.Since(w.at)})
	}
	return err
}

// waitBegins tells the observer that the contender of t waits, and
// returns the context the wait goes on with and the wait to end, nil when
// nobody is told (or Parked is, which ends nothing).
func (l *Lock) waitBegins(ctx context.Context, t *attempt) (context.Context, *WaitObs) {
	if l.Parked != nil {
		return l.Parked(ctx, t.a.Path, int(t.w.ahead)), nil
	}
	if l.Recipe == "" {
		return ctx, nil
	}
	return BeginWait(ctx, l.Client, connection.Wait{Recipe: l.Recipe, Path: l.Dir, Participant: t.a.Path, Ahead: int(t.w.ahead)})
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
