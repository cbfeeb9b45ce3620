package connection

import (
	"testing"
	"time"
)

// TestTrustedNowMeasuresSilence: TrustedNow follows the silence of the
// server on the monotonic clock at the moment it is asked, without the
// watchdog: under StandardPolicy up to the suspension threshold (two
// thirds of the session timeout), under SessionPolicy up to the local
// expiry; never for another session, an ended one, or a suspended one
// under StandardPolicy.
func TestTrustedNowMeasuresSilence(t *testing.T) {
	for _, tc := range []struct {
		policy ErrorPolicy
		limit  time.Duration // session timeout 3s
	}{{StandardPolicy, 2 * time.Second}, {SessionPolicy, 3*time.Second - 250*time.Millisecond}} {
		clock := 100 * time.Second
		tr := newTracker()
		tr.mono = func() time.Duration { return clock }
		tr.lastHeard.Store(int64(clock) + 1) // answered now
		s := newSession(0x1234, 3*time.Second, 0)
		c := &Client{tr: tr, session: s, state: Connected, opts: &options{errorPolicy: tc.policy}}

		if c.trustedNow(nil) || c.trustedNow(newSession(0x5678, 3*time.Second, 0)) {
			t.Fatalf("%v: another session trusted", tc.policy)
		}
		if !c.trustedNow(s) {
			t.Fatalf("%v: not trusted right after an answer", tc.policy)
		}
		clock += tc.limit - time.Millisecond
		if !c.trustedNow(s) {
			t.Fatalf("%v: not trusted after a silence of %v", tc.policy, tc.limit-time.Millisecond)
		}
		clock += time.Millisecond
		if c.trustedNow(s) {
			t.Fatalf("%v: trusted after a silence of %v", tc.policy, tc.limit)
		}
		clock -= time.Second // answered again: only the state decides now
		s.distrust(ErrSuspended)
		if got, want := c.trustedNow(s), tc.policy == SessionPolicy; got != want {
			t.Fatalf("%v: suspended: trusted %v, want %v", tc.policy, got, want)
		}
		s.end(ErrSessionLost)
		if c.trustedNow(s) {
			t.Fatalf("%v: an ended session trusted", tc.policy)
		}
	}
}
