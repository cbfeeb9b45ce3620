package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestLossCause(t *testing.T) {
	lost := func(why error) error { return fmt.Errorf("%w: %w", mutex.ErrLockLost, why) }
	for _, tc := range []struct {
		cause error
		want  error
	}{
		{lost(connection.ErrSuspended), errLostSuspended},
		{lost(connection.ErrSessionLost), errLostSession},
		{lost(fmt.Errorf("%w: %w", connection.ErrSessionLost, connection.ErrClosed)), errLostSession},
		{lost(fmt.Errorf("%w: /x/_c_a-lock-0000000001", connection.ErrNodeDeleted)), errLostNode},
		// Not a loss: kept.
		{mutex.ErrUnlocked, mutex.ErrUnlocked},
		{context.Canceled, context.Canceled},
	} {
		if got := lossCause(tc.cause); !errors.Is(got, tc.want) {
			t.Errorf("lossCause(%v) = %v, want %v", tc.cause, got, tc.want)
		}
	}
	if !strings.Contains(errLostSuspended.Error(), "connection suspended — counted as lost under the standard policy") {
		t.Errorf("suspension reads %q", errLostSuspended)
	}
}

func TestPrintable(t *testing.T) {
	long := strings.Repeat("é", 70)
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{nil, "(no data)"},
		{[]byte("zkrecipes lock pid 12 on hostA: sleep"), "zkrecipes lock pid 12 on hostA: sleep"},
		{[]byte("10.0.0.5"), "10.0.0.5"},
		{[]byte("two\nlines"), `"two\nlines"`},
		{[]byte{0xff, 0x00, 'a'}, `"\xff\x00a"`},
		{[]byte(long), strings.Repeat("é", 60) + "…"},
		{[]byte(strings.Repeat("\x01", 70)), `"` + strings.Repeat(`\x01`, 60) + `"…`},
	} {
		if got := printable(tc.data); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.data, got, tc.want)
		}
	}
}
