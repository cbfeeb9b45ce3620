package retry

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// sleeps asks p for backoffs until it stops (at most limit).
func sleeps(p backoff.BackOff, limit int) []time.Duration {
	var out []time.Duration
	for range limit {
		d := p.NextBackOff()
		if d == backoff.Stop {
			break
		}
		out = append(out, d)
	}
	return out
}

func TestExponentialBackoffJitter(t *testing.T) {
	const base = 10 * time.Millisecond
	cases := []struct {
		name string
		intn func(int) int // the "random" integer for each retry
		max  time.Duration
		want []time.Duration
	}{
		{"top of range", func(n int) int { return n - 1 }, 0,
			[]time.Duration{10 * time.Millisecond, 30 * time.Millisecond, 70 * time.Millisecond, 150 * time.Millisecond}},
		{"zero counts as one", func(int) int { return 0 }, 0,
			[]time.Duration{base, base, base, base}},
		{"capped", func(n int) int { return n - 1 }, 50 * time.Millisecond,
			[]time.Duration{10 * time.Millisecond, 30 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ExponentialBackoff(base, 4, c.max).(*exponential)
			var ranges []int
			p.intn = func(n int) int { ranges = append(ranges, n); return c.intn(n) }
			got := sleeps(p, 10)
			if len(got) != len(c.want) {
				t.Fatalf("got %d sleeps %v, want %v", len(got), got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("sleep %d = %v, want %v", i, got[i], c.want[i])
				}
				if ranges[i] != 1<<(i+1) {
					t.Errorf("retry %d drew from [0, %d), want [0, %d)", i, ranges[i], 1<<(i+1))
				}
			}
		})
	}
}

func TestExponentialBackoffRealJitterStaysInRange(t *testing.T) {
	const base = time.Millisecond
	p := ExponentialBackoff(base, 8, 0)
	for i, d := range sleeps(p, 100) {
		if lo, hi := base, base*time.Duration(1<<(i+1)); d < lo || d >= hi+base {
			t.Errorf("sleep %d = %v, outside [%v, %v)", i, d, lo, hi)
		}
	}
}

func TestRetryCounts(t *testing.T) {
	cases := []struct {
		name string
		p    Policy
		want int
	}{
		{"exponential 3", ExponentialBackoff(time.Millisecond, 3, 0), 3},
		{"exponential clamps to 29", ExponentialBackoff(time.Nanosecond, 100, time.Nanosecond), MaxExponentialRetries},
		{"exponential negative", ExponentialBackoff(time.Millisecond, -1, 0), 0},
		{"bounded", BoundedExponentialBackoff(time.Millisecond, 5, time.Second), 5},
		{"n times", NTimes(4, time.Millisecond), 4},
		{"one time", OneTime(time.Millisecond), 1},
		{"forever", Forever(time.Millisecond), 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := len(sleeps(c.p, 1000)); got != c.want {
				t.Fatalf("%d retries, want %d", got, c.want)
			}
			c.p.Reset()
			if got := len(sleeps(c.p, 1000)); got != c.want {
				t.Fatalf("after Reset: %d retries, want %d", got, c.want)
			}
			if got := len(sleeps(c.p.Clone(), 1000)); got != c.want {
				t.Fatalf("Clone: %d retries, want %d", got, c.want)
			}
		})
	}
}

func TestBoundedNeverExceedsCap(t *testing.T) {
	p := BoundedExponentialBackoff(10*time.Millisecond, 29, 200*time.Millisecond)
	for i, d := range sleeps(p, 100) {
		if d > 200*time.Millisecond {
			t.Fatalf("sleep %d = %v exceeds the cap", i, d)
		}
	}
	if d := BoundedExponentialBackoff(10*time.Millisecond, 5, 0).NextBackOff(); d != 10*time.Millisecond {
		t.Fatalf("bounded without a cap: %v, want the base", d)
	}
}

func TestUntilElapsed(t *testing.T) {
	now := time.Unix(0, 0)
	p := UntilElapsed(time.Second, 300*time.Millisecond).(*constant)
	p.now = func() time.Time { return now }
	p.Reset()
	var got []time.Duration
	for {
		d := p.NextBackOff()
		if d == backoff.Stop {
			break
		}
		got = append(got, d)
		now = now.Add(d) // the sleep passes, the attempt takes no time
	}
	// Retries at 0, 300, 600 and 900 ms; at 1200 ms the time is up.
	if len(got) != 4 {
		t.Fatalf("sleeps %v, want 4 of 300ms", got)
	}
	for _, d := range got {
		if d != 300*time.Millisecond {
			t.Fatalf("sleep %v, want 300ms", d)
		}
	}
}
