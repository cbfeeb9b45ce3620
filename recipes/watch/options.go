package watch

import (
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// DefaultBuffer is how many events a watcher holds for a slow reader
// unless WithBuffer says otherwise.
const DefaultBuffer = 4096

// Option configures a Watcher.
type Option func(*options) error

type options struct {
	recursive bool
	buffer    int
}

// WithRecursive watches the node and every node below it (a persistent
// recursive watch) instead of the node alone.
func WithRecursive() Option {
	return func(o *options) error {
		o.recursive = true
		return nil
	}
}

// WithBuffer sets how many events wait for a slow reader before the
// watcher drops them and sends Overflow (DefaultBuffer unless set; at
// least 1).
func WithBuffer(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return errtext.Errorf("watch: buffer %d must be at least 1: %w", n, connection.ErrInvalidOption)
		}
		o.buffer = n
		return nil
	}
}
