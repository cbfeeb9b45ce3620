// Package writeguard is what the recipes' guarded writes share: the
// guard a write option carries, the options applied in order, and the
// refusal of a guard whose hold is known to be over before anything is
// sent. Each recipe keeps its own WriteOption and WithGuard, which are
// its public API and document its write; this is the mechanism behind
// them, the same for a Node's SetData, a Registration's Update and a
// Counter's or Value's writes.
package writeguard

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Write is the guard of one write: Guarded once a WithGuard was given,
// Guard the hold's guard it gave (nil: the guard of no hold, refused).
type Write struct {
	Guarded bool
	Guard   *connection.Guard
}

// Use makes the write guarded by g.
func (w *Write) Use(g *connection.Guard) {
	w.Guarded, w.Guard = true, g
}

// Refused returns Refusal of the write's guard; nil without a guard.
func (w Write) Refused() error {
	if !w.Guarded {
		return nil
	}
	return Refusal(w.Guard)
}

// Refusal returns an error matching connection.ErrGuardFailed when g's
// hold is known to be over; nil while it lasts or cannot yet tell
// (connection.Multi waits for it then).
func Refusal(g *connection.Guard) error {
	err := g.Err()
	if err == nil || errors.Is(err, connection.ErrHoldUnsettled) {
		return nil
	}
	what := "guarded by " + g.Path()
	if g == nil {
		what = "guarded"
	}
	return errtext.Errorf("%s: %w: %w", what, connection.ErrGuardFailed, err)
}

// Apply applies opts to o in order. A nil option is an error matching
// connection.ErrInvalidOption; an option's own error is returned as it is.
func Apply[O any, F ~func(*O) error](o *O, opts []F) error {
	for _, opt := range opts {
		if opt == nil {
			return errtext.Errorf("%w: nil write option", connection.ErrInvalidOption)
		}
		if err := opt(o); err != nil {
			return err
		}
	}
	return nil
}
