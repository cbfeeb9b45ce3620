package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// wantCause checks that err matches every one of want and none of not.
func wantCause(t *testing.T, what string, err error, want []error, not ...error) {
	t.Helper()
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("%s = %v, want it to match %v", what, err, w)
		}
	}
	for _, n := range not {
		if errors.Is(err, n) {
			t.Errorf("%s = %v, want it not to match %v", what, err, n)
		}
	}
}

// TestErrOfAMutexWithoutAHold: a Mutex that never held says ErrNotLocked;
// once its hold is released, the Context it gives has the cause its Err
// says (the contract of the hold itself is holdtest's).
func TestErrOfAMutexWithoutAHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	m := newMutex(t, open(t, ens.Servers()), ens.Root(t)+"/lock")
	ctx := ctxFor(t, 30*time.Second)
	wantCause(t, "Err before Lock", m.Err(), []error{mutex.ErrNotLocked})
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	err := m.Err()
	wantCause(t, "Err after Unlock", err, []error{mutex.ErrUnlocked}, mutex.ErrLockLost, mutex.ErrNotLocked)
	if cause := context.Cause(m.Context()); cause != err {
		t.Errorf("Context after Unlock has cause %v, Err %v: want one error", cause, err)
	}
}
