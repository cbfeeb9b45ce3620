package semaphore

import (
	"context"
	"errors"
	"math"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// limits is the maximum number of leases during one acquire: fixed, or
// a shared count followed by a watch.
type limits struct {
	max     int
	watcher *shared.Watcher[int32] // for a shared count, or nil
	changed <-chan shared.Versioned[int32]
	cancel  context.CancelFunc
}

// limits starts following the maximum number of leases for one acquire:
// for a shared count, a watch on it (the node is created with the seed
// if it does not exist, as Curator's SharedCount.start does).
func (s *Semaphore) limits(ctx context.Context) (*limits, error) {
	if s.count == nil {
		return &limits{max: s.max}, nil
	}
	w, err := s.count.Watch(ctx)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(ctx)
	lim := &limits{watcher: w, cancel: cancel}
	if lim.changed, err = w.Listen(lctx); err != nil {
		lim.close()
		return nil, err
	}
	if cur, err := w.Current(); err == nil && !cur.Exists() {
		if _, err := s.count.Initialize(ctx); err != nil {
			lim.close()
			return nil, err
		}
	}
	return lim, nil
}

// current returns the maximum as the watch last saw it. The listener's
// channel wakes the waiter at each change (its first value, the current
// one, wakes it once for nothing).
func (l *limits) current() (int, error) {
	if l.watcher == nil {
		return l.max, nil
	}
	cur, err := l.watcher.Current()
	if errors.Is(err, shared.ErrCorrupt) {
		return 0, errtext.Errorf("%w: %w", ErrBadCount, err)
	}
	if err != nil {
		return 0, err
	}
	return int(cur.Value), nil
}

func (l *limits) close() {
	if l.watcher != nil {
		l.cancel()
		l.watcher.Close()
	}
}

// SetCount writes the shared count (WithSharedCount) as Curator's
// SharedCount does: a 4-byte big-endian integer. It wakes a waiting
// acquirer.
func (s *Semaphore) SetCount(ctx context.Context, n int) error {
	if s.countPath == "" {
		return errtext.Errorf("semaphore: %w: no shared count", connection.ErrInvalidOption)
	}
	if n < 0 || n > math.MaxInt32 {
		return errtext.Errorf("semaphore: %w: count %d", connection.ErrInvalidOption, n)
	}
	if _, err := s.count.Set(ctx, int32(n)); err != nil {
		return errtext.Errorf("semaphore: set count %s: %w", s.countPath, err)
	}
	return nil
}
