package writeguard_test

import (
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/writeguard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type opts struct{ writeguard.Write }

type option func(*opts) error

func withGuard(g *connection.Guard) option {
	return func(o *opts) error { o.Use(g); return nil }
}

// TestApplyRefusesANilOption: a nil option is connection.ErrInvalidOption,
// an option's own error comes back as it is, and options apply in order.
func TestApplyRefusesANilOption(t *testing.T) {
	var o opts
	if err := writeguard.Apply(&o, []option{withGuard(nil), nil}); !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("a nil option: %v, want ErrInvalidOption", err)
	}
	mine := errors.New("mine")
	o = opts{}
	if err := writeguard.Apply(&o, []option{func(*opts) error { return mine }}); err != mine {
		t.Fatalf("an option's error: %v, want it as it is", err)
	}
	o = opts{}
	if err := writeguard.Apply(&o, []option{withGuard(nil)}); err != nil || !o.Guarded || o.Guard != nil {
		t.Fatalf("WithGuard(nil): %v, guarded %v", err, o.Guarded)
	}
}

// TestGuardOfNoHoldIsRefused: a write without a guard is not refused; one
// guarded by a nil guard (the guard of no hold) is, with
// connection.ErrGuardFailed, before anything is sent.
func TestGuardOfNoHoldIsRefused(t *testing.T) {
	if err := (writeguard.Write{}).Refused(); err != nil {
		t.Fatalf("no guard: %v", err)
	}
	var w writeguard.Write
	w.Use(nil)
	if err := w.Refused(); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("the guard of no hold: %v, want ErrGuardFailed", err)
	}
	if err := writeguard.Refusal(nil); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("Refusal(nil): %v, want ErrGuardFailed", err)
	}
}
