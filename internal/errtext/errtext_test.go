package errtext_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

func TestNameOnce(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"mutex: not locked", "mutex: not locked"},
		{"mutex: unlock /x: mutex: not locked", "mutex: unlock /x: not locked"},
		{"mutex: unlock /x: mutex: lock lost: connection: session lost",
			"mutex: unlock /x: lock lost: connection: session lost"},
		{"connection: get /: connection: session lost: connection: client closed",
			"connection: get /: session lost: client closed"},
		{"mutex: lock lost: connection: session lost (connection: delete /x: connection: session lost)",
			"mutex: lock lost: connection: session lost (delete /x: session lost)"},
		// A path that ends in a name is not a part's start.
		{"mutex: unlock /locks/mutex: mutex: not locked", "mutex: unlock /locks/mutex: not locked"},
		{"queue: put /queue: connection: create /queue/entries: zk: node exists",
			"queue: put /queue: connection: create /queue/entries: zk: node exists"},
		// Each line of a joined error is a message of its own.
		{"queue: consume /q/e: queue: outcome unknown\nconnection: multi: connection: outcome unknown",
			"queue: consume /q/e: outcome unknown\nconnection: multi: outcome unknown"},
		// Words that are not package names stay.
		{"semaphore: shared count: semaphore: bad", "semaphore: shared count: bad"},
		{"withdraw: withdraw: x", "withdraw: withdraw: x"},
		{"", ""},
		{"mutex:", "mutex:"},
		{"mutex: ", "mutex: "},
	} {
		if got := errtext.NameOnce(tc.in); got != tc.want {
			t.Errorf("NameOnce(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestErrorfKeepsTheChain(t *testing.T) {
	sentinel := errors.New("mutex: not locked")
	other := errors.New("connection: session lost")
	err := errtext.Errorf("mutex: unlock %s: %w (%w)", "/x", sentinel, other)
	if got, want := err.Error(), "mutex: unlock /x: not locked (connection: session lost)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, sentinel) || !errors.Is(err, other) {
		t.Errorf("%v does not match its wrapped errors", err)
	}
	wrapped := fmt.Errorf("outer: %w", err)
	if !errors.Is(wrapped, sentinel) {
		t.Errorf("%v does not match through another wrapper", wrapped)
	}
	// A message with nothing to remove is fmt.Errorf's own error.
	plain := errtext.Errorf("mutex: unlock %s: %w", "/x", other)
	if errors.Unwrap(plain) != other {
		t.Errorf("Errorf without a repeated name: Unwrap = %v, want the wrapped error", errors.Unwrap(plain))
	}
}
