package wire

import (
	"testing"
	"time"
)

// TestHandshakeBound: the session timeout shared among the servers, as in
// the Java client, never below the dial timeout.
func TestHandshakeBound(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		servers int
		dial    time.Duration
		want    time.Duration
	}{
		{15 * time.Second, 1, time.Second, 15 * time.Second},
		{15 * time.Second, 2, time.Second, 7500 * time.Millisecond},
		{15 * time.Second, 3, time.Second, 5 * time.Second},
		{time.Second, 3, time.Second, time.Second},
		{2 * time.Second, 0, time.Second, 2 * time.Second},
	} {
		if got := HandshakeBound(tc.timeout, tc.servers, tc.dial); got != tc.want {
			t.Errorf("HandshakeBound(%v, %d, %v) = %v, want %v", tc.timeout, tc.servers, tc.dial, got, tc.want)
		}
	}
}
