package shared

import (
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/writeguard"
)

// Writes fenced by a hold.
//
// WithGuard puts a hold's guard (connection.Guard: a lock's, a leader's
// term's, a taken queue item's) into the transaction of each write an
// operation sends, so the write commits only while the hold lasts, all or
// nothing: a Counter's set of the value and of its marker, a Value's set
// or create. The connection sends the guard's check first and only in the
// hold's session, and refuses a guard whose hold is over without sending
// anything (connection.Multi's rules). So:
//
//   - the hold over when the operation starts, or between two of its
//     tries: nothing is sent, the error matches connection.ErrGuardFailed;
//   - the hold's node found gone by the server, or the hold over when the
//     transaction is written: the server applies nothing, the error
//     matches connection.ErrGuardFailed;
//   - the answer lost: as without a guard. A Counter's marker settles
//     whether the write applied (and if it did, it applied while the hold
//     lasted); a Value's TrySet settles it when a read can; otherwise the
//     error wraps connection.ErrOutcomeUnknown.
//
// A guard ties the write to the hold's session: the guard of another
// client's hold (another session) is refused, ErrGuardFailed. What a
// guarded operation may write outside the transaction changes no value:
// a Counter's marker (an ephemeral child), the counter's node at 0 where
// it does not exist (read as 0 anyway), missing parents as containers.

// WriteOption configures one write of a Counter or a Value.
type WriteOption func(*writeOptions) error

type writeOptions struct {
	writeguard.Write
}

// WithGuard makes the write commit only while the hold of g lasts, in the
// same transaction as the write: see the package documentation, "Fenced
// by a hold". A nil g is the guard of no hold: the write is refused with
// connection.ErrGuardFailed.
func WithGuard(g *connection.Guard) WriteOption {
	return func(o *writeOptions) error {
		o.Use(g)
		return nil
	}
}

// writeOpts applies opts.
func writeOpts(opts []WriteOption) (writeOptions, error) {
	var o writeOptions
	err := writeguard.Apply(&o, opts)
	return o, err
}

// ops returns ops followed by the guard, if there is one: the responses
// of a Multi are in the order of its ops, so the write's stay first.
func (o writeOptions) ops(ops ...any) []any {
	if o.Guarded {
		ops = append(ops, o.Guard)
	}
	return ops
}

// opErr returns the error of the i-th op of a Multi's responses, or nil.
func opErr(res []zk.MultiResponse, i int) error {
	if i < len(res) {
		return res[i].Error
	}
	return nil
}
