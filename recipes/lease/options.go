package lease

import (
	"os"
	"time"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Option configures Obtain and ObtainOneOf.
type Option func(*config) error

type config struct {
	identifier string
	clock      func() time.Time
}

// WithIdentifier sets the holder's identifier (Kazoo's identifier): the
// holder that obtains the lease again with the same identifier renews
// it, whatever its end. The hostname unless set, as in Kazoo; it must
// not be empty and must be UTF-8. Takers of one identifier are one
// holder: with the default, every taker on a host, in any process,
// renews the others' lease. Give each taker that must exclude the others
// an identifier of its own.
func WithIdentifier(id string) Option {
	return func(c *config) error {
		if id == "" || !utf8.ValidString(id) {
			return errtext.Errorf("lease: identifier %q: %w: empty or not UTF-8", id, connection.ErrInvalidOption)
		}
		c.identifier = id
		return nil
	}
}

// WithClock sets the clock that says what time it is now: time.Now
// unless set (Kazoo's utcnow, for tests).
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return errtext.Errorf("lease: %w: nil clock", connection.ErrInvalidOption)
		}
		c.clock = now
		return nil
	}
}

func newConfig(d time.Duration, opts []Option) (config, error) {
	c := config{clock: time.Now}
	// The record's end is to the second, rounded down: a shorter lease
	// could be written over already.
	if d < time.Second {
		return c, errtext.Errorf("lease: duration %v: %w: must be at least a second", d, connection.ErrInvalidOption)
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	if c.identifier == "" {
		host, err := os.Hostname()
		if err != nil || host == "" || !utf8.ValidString(host) {
			return c, errtext.Errorf("lease: no hostname for an identifier: %w: set WithIdentifier", connection.ErrInvalidOption)
		}
		c.identifier = host
	}
	return c, nil
}
