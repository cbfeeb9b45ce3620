package lockcore

import (
	"context"
)

// holdContext is a hold's context. Besides being one, it has AfterFunc,
// which, unlike context.AfterFunc, calls f synchronously in the goroutine
// that ends the hold, before that goroutine goes on: a multi-lock closes
// its own Done with it the moment a part ends, not a goroutine later.
type holdContext struct {
	context.Context
	h *Hold
}

// AfterFunc arranges for f to be called when the hold ends, synchronously,
// right before its Done closes (at once if it has ended). stop unregisters
// f and reports whether it did so before f was called. f must be quick and
// must not end the hold.
func (c holdContext) AfterFunc(f func()) (stop func() bool) {
	h := c.h
	h.mu.Lock()
	if h.over {
		h.mu.Unlock()
		f()
		return func() bool { return false }
	}
	p := &f
	h.hooks = append(h.hooks, p)
	h.mu.Unlock()
	return func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, q := range h.hooks {
			if q == p {
				h.hooks = append(h.hooks[:i:i], h.hooks[i+1:]...)
				return true
			}
		}
		return false
	}
}

// ending returns the cause the hold ends with, known to the hooks of
// AfterFunc before Context's cause is: they run before it is cancelled.
func (c holdContext) ending() error {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	return c.h.ending
}
