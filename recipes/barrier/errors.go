package barrier

import "errors"

// Errors of the package. Match them with errors.Is. A wait ended by its
// context wraps the context's error (context.Canceled or
// context.DeadlineExceeded); the errors of the connection package
// (ErrInvalidPath, ErrInvalidOption, ErrClosed, ErrOutcomeUnknown...) are
// passed through, wrapped.
var (
	// ErrMemberLost means a member's node went while it was entering,
	// inside or leaving a double barrier: its session ended (the error
	// then wraps connection.ErrSessionLost too) or another client deleted
	// it (connection.ErrNodeDeleted). A suspension does not end a
	// membership. The member no longer counts: the others neither wait for it
	// nor count it as arrived. It is out of the barrier; Enter makes it
	// a member again, with a new node.
	ErrMemberLost = errors.New("barrier: membership lost")
	// ErrEntered means Enter was called on a member that is already in
	// the barrier: it must Leave first.
	ErrEntered = errors.New("barrier: already entered")
	// ErrNotEntered means Leave was called on a member that is not in
	// the barrier: it never entered, it left already, or its Enter failed.
	ErrNotEntered = errors.New("barrier: not entered")
)
