package testkit

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Recorder is an observer that records every event it is told, in order,
// and counts how many times each end was reported: a test compares them
// with what happened.
type Recorder struct {
	mu            sync.Mutex
	requests      []*Recorded[connection.Request, connection.RequestDone]
	notifications []connection.Notification
	states        []connection.StateChange
	waits         []*Recorded[connection.Wait, connection.WaitDone]
	holds         []*Recorded[connection.Hold, connection.HoldDone]
	views         []connection.ViewChange
	closes        []connection.ClientClosed
	outcomes      []Recorded[connection.CounterOutcome, struct{}]
}

// Recorded is a beginning and its ends (one, if the observer's contract
// holds), with the value the beginning's context carried under CtxKey.
type Recorded[B, E any] struct {
	Begin  B
	Ends   []E
	CtxVal any
}

// CtxKey is the context key whose value a Recorder keeps with each
// beginning; WaitCtxVal is the value the Recorder puts under it in the
// context its Wait returns.
type CtxKey struct{}

// WaitCtxVal marks the contexts of a wait's requests (Recorder.Observer).
const WaitCtxVal = "wait"

// Observer returns the observer that records into r.
func (r *Recorder) Observer() *connection.Observer {
	return &connection.Observer{
		Request: func(ctx context.Context, q connection.Request) func(connection.RequestDone) {
			e := &Recorded[connection.Request, connection.RequestDone]{Begin: q, CtxVal: ctx.Value(CtxKey{})}
			r.mu.Lock()
			r.requests = append(r.requests, e)
			r.mu.Unlock()
			return func(d connection.RequestDone) { r.mu.Lock(); e.Ends = append(e.Ends, d); r.mu.Unlock() }
		},
		Notification: func(n connection.Notification) {
			r.mu.Lock()
			r.notifications = append(r.notifications, n)
			r.mu.Unlock()
		},
		StateChange: func(s connection.StateChange) {
			r.mu.Lock()
			r.states = append(r.states, s)
			r.mu.Unlock()
		},
		Wait: func(ctx context.Context, w connection.Wait) (context.Context, func(connection.WaitDone)) {
			e := &Recorded[connection.Wait, connection.WaitDone]{Begin: w, CtxVal: ctx.Value(CtxKey{})}
			r.mu.Lock()
			r.waits = append(r.waits, e)
			r.mu.Unlock()
			return context.WithValue(ctx, CtxKey{}, WaitCtxVal),
				func(d connection.WaitDone) { r.mu.Lock(); e.Ends = append(e.Ends, d); r.mu.Unlock() }
		},
		Hold: func(ctx context.Context, h connection.Hold) func(connection.HoldDone) {
			e := &Recorded[connection.Hold, connection.HoldDone]{Begin: h, CtxVal: ctx.Value(CtxKey{})}
			r.mu.Lock()
			r.holds = append(r.holds, e)
			r.mu.Unlock()
			return func(d connection.HoldDone) { r.mu.Lock(); e.Ends = append(e.Ends, d); r.mu.Unlock() }
		},
		View: func(v connection.ViewChange) {
			r.mu.Lock()
			r.views = append(r.views, v)
			r.mu.Unlock()
		},
		Closed: func(c connection.ClientClosed) {
			r.mu.Lock()
			r.closes = append(r.closes, c)
			r.mu.Unlock()
		},
		CounterOutcome: func(ctx context.Context, o connection.CounterOutcome) {
			r.mu.Lock()
			r.outcomes = append(r.outcomes, Recorded[connection.CounterOutcome, struct{}]{Begin: o, CtxVal: ctx.Value(CtxKey{})})
			r.mu.Unlock()
		},
	}
}

// Closes returns the closes of the client recorded so far.
func (r *Recorder) Closes() []connection.ClientClosed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]connection.ClientClosed(nil), r.closes...)
}

// CounterOutcomes returns the counters' outcomes of lost answers recorded
// so far, each with its context's value.
func (r *Recorder) CounterOutcomes() []Recorded[connection.CounterOutcome, struct{}] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded[connection.CounterOutcome, struct{}](nil), r.outcomes...)
}

// Views returns the changes of views' trust recorded so far.
func (r *Recorder) Views() []connection.ViewChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]connection.ViewChange(nil), r.views...)
}

// snapshot copies the records, ends included, under r.mu.
func snapshot[B, E any](r *Recorder, list []*Recorded[B, E]) []Recorded[B, E] {
	out := make([]Recorded[B, E], len(list))
	for i, e := range list {
		out[i] = Recorded[B, E]{Begin: e.Begin, Ends: append([]E(nil), e.Ends...), CtxVal: e.CtxVal}
	}
	return out
}

// Requests returns the requests recorded so far.
func (r *Recorder) Requests() []Recorded[connection.Request, connection.RequestDone] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return snapshot(r, r.requests)
}

// Waits returns the waits recorded so far.
func (r *Recorder) Waits() []Recorded[connection.Wait, connection.WaitDone] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return snapshot(r, r.waits)
}

// Holds returns the holds recorded so far.
func (r *Recorder) Holds() []Recorded[connection.Hold, connection.HoldDone] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return snapshot(r, r.holds)
}

// HoldsOf returns the holds of recipe recorded so far.
func (r *Recorder) HoldsOf(recipe string) []Recorded[connection.Hold, connection.HoldDone] {
	var of []Recorded[connection.Hold, connection.HoldDone]
	for _, h := range r.Holds() {
		if h.Begin.Recipe == recipe {
			of = append(of, h)
		}
	}
	return of
}

// Notifications returns the notifications recorded so far.
func (r *Recorder) Notifications() []connection.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]connection.Notification(nil), r.notifications...)
}

// States returns the state changes recorded so far.
func (r *Recorder) States() []connection.StateChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]connection.StateChange(nil), r.states...)
}

// OnceEnded fails t unless every record in list has exactly one end.
func OnceEnded[B, E any](t testing.TB, what string, list []Recorded[B, E]) {
	t.Helper()
	for i, e := range list {
		if len(e.Ends) != 1 {
			t.Errorf("%s %d (%+v): %d ends, want 1: %s", what, i, e.Begin, len(e.Ends), fmt.Sprint(e.Ends))
		}
	}
}
