package queue

import (
	"context"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// takeWait is a worker's wait for an item, told to the client's observer
// as a Wait of Recipe "queue": it begins when the worker first finds it
// cannot take an item at once — it parks in the line behind other idle
// workers (Ahead: those workers), or, at the head of the line, finds
// nothing to take (Ahead 0) — with its place in the line as Participant.
// It lasts through the places a lost session makes it take again, and ends
// once, as Take returns: nil with an item, else Take's error (the
// context's end, ErrClosed, ...). A Take that never waits tells nothing.
type takeWait struct {
	q     *Queue
	ctx   context.Context // the wait's, once begun
	obs   *lockcore.WaitObs
	begun bool
}

type takeWaitKey struct{}

// observeTake returns ctx carrying a wait for the observer, and the wait;
// ctx and nil when nobody observes waits.
func (q *Queue) observeTake(ctx context.Context) (context.Context, *takeWait) {
	if o := connx.Of(q.client).Observer(); o == nil || o.Wait == nil {
		return ctx, nil
	}
	tw := &takeWait{q: q}
	return context.WithValue(ctx, takeWaitKey{}, tw), tw
}

// waiting begins the wait of the take made with ctx, if it is observed
// and has not begun, and returns the context the take goes on with.
func waiting(ctx context.Context, node string, ahead int) context.Context {
	tw, _ := ctx.Value(takeWaitKey{}).(*takeWait)
	if tw == nil {
		return ctx
	}
	if !tw.begun {
		tw.begun = true
		tw.ctx, tw.obs = lockcore.BeginWait(ctx, tw.q.client, connection.Wait{Recipe: "queue", Path: tw.q.path, Participant: node, Ahead: ahead})
	}
	return tw.ctx
}

// waitContext is the context of the wait of the take made with ctx, once
// it began; ctx before.
func waitContext(ctx context.Context) context.Context {
	if tw, _ := ctx.Value(takeWaitKey{}).(*takeWait); tw != nil && tw.begun {
		return tw.ctx
	}
	return ctx
}

// end ends the wait, if it began, with the take's error.
func (tw *takeWait) end(err error) {
	if tw != nil {
		tw.obs.End(err)
	}
}
