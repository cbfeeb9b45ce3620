package barrier

import (
	"context"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// waitObs is a barrier's wait as the client's observer is told of it:
// once, when the caller first has to wait, and ended once, as the call
// returns. Its zero value has not begun.
type waitObs struct {
	obs   *lockcore.WaitObs
	begun bool
}

// begin tells the observer of w, and returns the context the wait goes
// on with. The caller calls it once, while begun is false.
func (o *waitObs) begin(ctx context.Context, c *connection.Client, w connection.Wait) context.Context {
	o.begun = true
	ctx, o.obs = lockcore.BeginWait(ctx, c, w)
	return ctx
}

// end tells the observer how the wait ended, if it began.
func (o *waitObs) end(err error) { o.obs.End(err) }
