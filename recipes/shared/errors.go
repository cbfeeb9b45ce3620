package shared

import "errors"

// Errors of the package. Match them with errors.Is. A write whose answer
// never came and could not be settled wraps connection.ErrOutcomeUnknown;
// the others of the connection package (ErrSessionLost, ErrClosed,
// ErrInvalidPath...) and the context's are passed through, wrapped.
var (
	// ErrChanged is returned by TrySet when the node is no longer at the
	// version given: another participant wrote it first (or created it,
	// when the version said it was absent). Nothing was written.
	ErrChanged = errors.New("shared: the value changed since it was read")
	// ErrCorrupt means the node's data is not a value of the encoding: a
	// 4-byte count that is 3 bytes long, text that is not a number.
	ErrCorrupt = errors.New("shared: data is not a value of the encoding")
	// ErrOverflow means a result falls outside what the encoding can hold:
	// an Int32 counter beyond 2147483647, any counter beyond 64 bits.
	// Nothing was written.
	ErrOverflow = errors.New("shared: number out of the encoding's range")
	// ErrClosed means the Counter or the Watcher was closed.
	ErrClosed = errors.New("shared: closed")
)
