package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestLossCause(t *testing.T) {
	nodeGone := fmt.Errorf("%w: %w: /x/_c_a-lock-0000000001 (by another client, or with its session)", mutex.ErrLockLost, lockcore.ErrNodeGone)
	for _, tc := range []struct {
		cause  error
		policy connection.ErrorPolicy
		alive  bool
		want   error
	}{
		{mutex.ErrLockLost, connection.StandardPolicy, true, errLostSuspended},
		{mutex.ErrLockLost, connection.StandardPolicy, false, errLostSession},
		{mutex.ErrLockLost, connection.SessionPolicy, false, errLostSession},
		// Under the session policy a hold ends only with its session.
		{mutex.ErrLockLost, connection.SessionPolicy, true, errLostSession},
		{nodeGone, connection.StandardPolicy, true, errLostNode},
		{nodeGone, connection.SessionPolicy, false, errLostNode},
		// Not a loss: kept.
		{lockcore.ErrReleased, connection.StandardPolicy, true, lockcore.ErrReleased},
		{context.Canceled, connection.StandardPolicy, true, context.Canceled},
	} {
		if got := lossCause(tc.cause, tc.policy, tc.alive); !errors.Is(got, tc.want) {
			t.Errorf("lossCause(%v, %v, alive %v) = %v, want %v", tc.cause, tc.policy, tc.alive, got, tc.want)
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
