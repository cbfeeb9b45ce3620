// Package chanx holds the channel values the library's packages share.
package chanx

// Closed is a channel that is already closed: a wait on it ends at once.
// It is what a Done returns when there is nothing to wait for. Nobody
// closes or sends on it.
var Closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
