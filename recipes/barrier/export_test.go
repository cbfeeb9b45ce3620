package barrier

import (
	"sync/atomic"
	"time"
)

// Hooks is a test's handle on the waits of a Barrier or a Double: it
// wakes them for no reason and counts their reads of the server.
type Hooks struct {
	h      *hooks
	checks atomic.Int64
}

// Checks returns how many times a wait has begun to read the server.
func (x *Hooks) Checks() int64 { return x.checks.Load() }

// Wake wakes a wait of the hooked value, as a spurious wake-up would, and
// reports whether one took it within d.
func (x *Hooks) Wake(d time.Duration) bool {
	select {
	case x.h.wake <- struct{}{}:
		return true
	case <-time.After(d):
		return false
	}
}

func newHooks() *Hooks {
	x := &Hooks{h: &hooks{wake: make(chan struct{})}}
	x.h.checked = func() { x.checks.Add(1) }
	return x
}

// HookDouble hooks d's waits; call it before d is used.
func HookDouble(d *Double) *Hooks {
	x := newHooks()
	d.hooks = x.h
	return x
}

// HookBarrier hooks b's waits; call it before b is used.
func HookBarrier(b *Barrier) *Hooks {
	x := newHooks()
	b.hooks = x.h
	return x
}
