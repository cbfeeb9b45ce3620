package lease

import "errors"

// Errors of the package. Match them with errors.Is. A call ended by its
// context wraps the context's error; the errors of the connection package
// (ErrInvalidPath, ErrInvalidOption, ErrClosed, ErrSessionLost...) are
// passed through, wrapped.
var (
	// ErrHeld means another holder's lease runs until a later time than
	// now, by this process's clock. The error names the holder and the
	// end.
	ErrHeld = errors.New("lease: held by another")
	// ErrVersion means the lease's record is of a format version other
	// than Kazoo's 1: as Kazoo does, the lease is left to a client that
	// knows it.
	ErrVersion = errors.New("lease: record of another version")
	// ErrBadRecord means the lease's record is not Kazoo's JSON: not
	// JSON, a field missing or of another type, an end that is not a
	// time. Nothing is written over it (Kazoo fails on it too).
	ErrBadRecord = errors.New("lease: bad record")
	// ErrExpired is the cause of a Lease's end: its end time has come, by
	// this process's clock.
	ErrExpired = errors.New("lease: expired")
)
