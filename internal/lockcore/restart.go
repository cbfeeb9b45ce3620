package lockcore

import (
	"context"
	"errors"

	"github.com/zkrecipes/zkrecipes/connection"
)

// ErrRestart means an attempt's node or session is gone: try again with a
// new node. It never reaches a recipe's caller (Restarting).
var ErrRestart = errors.New("lockcore: restart")

// RestartOn turns a lost session into ErrRestart and passes other errors.
func RestartOn(err error) error {
	if errors.Is(err, connection.ErrSessionLost) {
		return ErrRestart
	}
	return err
}

// Restarting says what becomes of an attempt that ended with err: it
// starts again (true) on ErrRestart while ctx lasts; otherwise it returns
// the error to report, which is ctx's when ctx ended the restart, and nil
// when err is nil.
func Restarting(ctx context.Context, err error) (bool, error) {
	if !errors.Is(err, ErrRestart) {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return true, nil
}
