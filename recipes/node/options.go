package node

import (
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/nodeopt"
)

// DefaultMode is the mode of a Node unless WithMode says otherwise: an
// ephemeral node, which goes with the session that made it and is made
// again in the next one.
const DefaultMode = connection.Ephemeral

// Option configures a Node.
type Option func(*options) error

type options struct {
	mode   connection.Mode
	ttl    time.Duration
	adopt  bool
	recipe string // the observer's name of the presence periods; "node" if ""
}

func init() {
	nodeopt.Recipe = func(name string) any {
		return Option(func(o *options) error { o.recipe = name; return nil })
	}
}

// WithMode sets the kind of node kept (DefaultMode unless set): any
// connection.Mode. A sequential mode gives the node a protected name,
// "_c_<uuid>-<name><sequence>", and keeps that name when it is made again.
// A TTL mode (connection.PersistentTTL, connection.PersistentSequentialTTL)
// needs WithTTL.
func WithMode(m connection.Mode) Option {
	return func(o *options) error {
		if m < connection.Persistent || m > connection.PersistentSequentialTTL {
			return errtext.Errorf("node: %w: mode %d", connection.ErrInvalidOption, int32(m))
		}
		o.mode = m
		return nil
	}
}

// WithTTL sets the TTL of a node of a TTL mode: the server deletes it once
// it has had no child and no change for that long (whole milliseconds, up
// to connection.MaxTTL). The servers must be started with
// -Dzookeeper.extendedTypesEnabled=true. See also NewTTL, which keeps such
// a node alive without changing it.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) error {
		if ttl < time.Millisecond || ttl > connection.MaxTTL || ttl%time.Millisecond != 0 {
			return errtext.Errorf("node: %w: TTL %v: want whole milliseconds from 1ms to 2^40-1ms (connection.MaxTTL)", connection.ErrInvalidOption, ttl)
		}
		o.ttl = ttl
		return nil
	}
}

// WithAdoptExisting makes the Node take a node it finds at its path for
// its own, whoever made it, as Curator's PersistentNode does: the node
// gets the Node's data, and Close deletes it. Without it a Node keeps only
// a node it made itself, and leaves any other where it is (ErrOccupied):
// one that was there before Start, or one someone else made at the path
// after deleting the Node's. It is for the persistent kinds at a fixed
// path (connection.Persistent, connection.Container,
// connection.PersistentTTL); an ephemeral node belongs to its session, and
// a sequential one carries the Node's own protected name, so with other
// modes it is an invalid option.
func WithAdoptExisting() Option {
	return func(o *options) error {
		o.adopt = true
		return nil
	}
}

// check refuses a TTL mode without a TTL, a TTL without a TTL mode, and
// WithAdoptExisting for a mode it does not apply to.
func (o *options) check() error {
	switch {
	case o.mode.TTL() && o.ttl == 0:
		return errtext.Errorf("node: %w: mode %s needs WithTTL", connection.ErrInvalidOption, o.mode)
	case !o.mode.TTL() && o.ttl != 0:
		return errtext.Errorf("node: %w: WithTTL needs a TTL mode, not %s", connection.ErrInvalidOption, o.mode)
	case o.adopt && (o.mode.Ephemeral() || o.mode.Sequential()):
		return errtext.Errorf("node: %w: WithAdoptExisting needs a persistent mode at a fixed path, not %s", connection.ErrInvalidOption, o.mode)
	}
	return nil
}

// fixed is the mode of a sequential node made again at the name it was
// given: the same kind without the sequence, as Curator's PersistentNode
// does, so that the node keeps its name.
func fixed(m connection.Mode) connection.Mode {
	switch m {
	case connection.EphemeralSequential:
		return connection.Ephemeral
	case connection.PersistentSequential:
		return connection.Persistent
	case connection.PersistentSequentialTTL:
		return connection.PersistentTTL
	}
	return m
}
