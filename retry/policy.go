package retry

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// MaxExponentialRetries is the most retries ExponentialBackoff allows, as in
// Curator: beyond it the jitter range 2^(n+1) overflows a 32-bit int.
const MaxExponentialRetries = 29

// Policy is a retry policy: a backoff.BackOff that counts the retries of
// one operation, and can make fresh copies of itself so that one policy
// value can be shared by many concurrent operations.
//
// A Policy itself is safe for concurrent use, but a BackOff in use counts
// retries for whoever calls it; Do starts every operation from Clone.
type Policy interface {
	backoff.BackOff
	// Clone returns the policy in its initial state.
	Clone() Policy
}

// counter is the state every policy shares: how many retries it has given
// and when the first one was asked for.
type counter struct {
	mu      sync.Mutex
	retries int
	start   time.Time
	now     func() time.Time
}

func (c *counter) next(f func(retries int, elapsed time.Duration) time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()()
	if c.start.IsZero() {
		c.start = now
	}
	d := f(c.retries, now.Sub(c.start))
	if d != backoff.Stop {
		c.retries++
	}
	return d
}

func (c *counter) clock() func() time.Time {
	if c.now == nil {
		return time.Now
	}
	return c.now
}

// Reset starts counting retries, and the time they take, again. backoff's
// retry loops call it when they start.
func (c *counter) Reset() {
	c.mu.Lock()
	c.retries = 0
	c.start = c.clock()()
	c.mu.Unlock()
}

// exponential is Curator's ExponentialBackoffRetry and
// BoundedExponentialBackoffRetry.
type exponential struct {
	counter
	base       time.Duration
	maxRetries int
	maxSleep   time.Duration // 0: no cap
	intn       func(n int) int
}

// ExponentialBackoff retries up to maxRetries times (at most
// MaxExponentialRetries), sleeping before retry n (from 0)
//
//	base × max(1, random integer in [0, 2^(n+1)))
//
// as Curator's ExponentialBackoffRetry does, capped at maxSleep when
// maxSleep > 0. Negative arguments count as 0.
func ExponentialBackoff(base time.Duration, maxRetries int, maxSleep time.Duration) Policy {
	return &exponential{
		base:       max(base, 0),
		maxRetries: min(max(maxRetries, 0), MaxExponentialRetries),
		maxSleep:   max(maxSleep, 0),
		intn:       rand.IntN,
	}
}

// BoundedExponentialBackoff is ExponentialBackoff with a required cap, like
// Curator's BoundedExponentialBackoffRetry: no sleep exceeds maxSleep. A
// maxSleep of 0 or less caps every sleep at base.
func BoundedExponentialBackoff(base time.Duration, maxRetries int, maxSleep time.Duration) Policy {
	p := ExponentialBackoff(base, maxRetries, maxSleep).(*exponential)
	if p.maxSleep == 0 {
		p.maxSleep = p.base
	}
	return p
}

func (p *exponential) NextBackOff() time.Duration {
	return p.next(func(n int, _ time.Duration) time.Duration {
		if n >= p.maxRetries {
			return backoff.Stop
		}
		d := p.base * time.Duration(max(1, p.intn(1<<(n+1))))
		if p.maxSleep > 0 && d > p.maxSleep {
			d = p.maxSleep
		}
		return d
	})
}

func (p *exponential) Clone() Policy {
	c := &exponential{base: p.base, maxRetries: p.maxRetries, maxSleep: p.maxSleep, intn: p.intn}
	c.now = p.now
	return c
}

// constant sleeps the same time before each retry, for a number of
// retries or a total time.
type constant struct {
	counter
	sleep      time.Duration
	maxRetries int           // < 0: no limit
	maxElapsed time.Duration // 0: no limit
}

// NTimes retries up to n times, sleeping sleep before each (Curator's
// RetryNTimes).
func NTimes(n int, sleep time.Duration) Policy {
	return &constant{sleep: max(sleep, 0), maxRetries: max(n, 0)}
}

// OneTime retries once after sleep (Curator's RetryOneTime).
func OneTime(sleep time.Duration) Policy { return NTimes(1, sleep) }

// UntilElapsed retries, sleeping sleep before each retry, while less than
// maxElapsed has passed since the operation started (Curator's
// RetryUntilElapsed).
func UntilElapsed(maxElapsed, sleep time.Duration) Policy {
	return &constant{sleep: max(sleep, 0), maxRetries: -1, maxElapsed: max(maxElapsed, 0)}
}

// Forever retries without end, sleeping interval before each retry
// (Curator's RetryForever). Bound it with a context.
func Forever(interval time.Duration) Policy {
	return &constant{sleep: max(interval, 0), maxRetries: -1}
}

func (p *constant) NextBackOff() time.Duration {
	return p.next(func(n int, elapsed time.Duration) time.Duration {
		if p.maxRetries >= 0 && n >= p.maxRetries {
			return backoff.Stop
		}
		if p.maxElapsed > 0 && elapsed >= p.maxElapsed {
			return backoff.Stop
		}
		return p.sleep
	})
}

func (p *constant) Clone() Policy {
	c := &constant{sleep: p.sleep, maxRetries: p.maxRetries, maxElapsed: p.maxElapsed}
	c.now = p.now
	return c
}
