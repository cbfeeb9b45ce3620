package testkit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Bounds on what a recipe may spend recovering from a fault, from the
// fault's start until it is back (trusted and equal to the server): a
// recipe of a few nodes that reads them once or twice stays far below;
// one that reads or retries in a loop (thousands of requests a second,
// a core kept busy) does not.
const (
	RecoveryRequests = 2000
	RecoveryCPU      = 2 * time.Second
)

// Recovery measures what the code under test spends recovering from a
// fault: the wall time, the process's CPU time (CPUTime) and a count of
// the requests it sent, from StartRecovery until Check.
type Recovery struct {
	began    time.Time
	cpu0     time.Duration
	requests func() int64
	n0       int64
}

// StartRecovery starts measuring a recovery; call it as the fault begins.
// requests counts what the code under test sent so far: a client's
// Stats().Replies (every answer, pings included, of a client only the
// recipe under test uses), a cache's Stats().Reads.
func StartRecovery(requests func() int64) *Recovery {
	return &Recovery{began: time.Now(), cpu0: CPUTime(), requests: requests, n0: requests()}
}

// Wait calls f until it returns nil, and fails the test with f's last
// errors if that takes longer than timeout from the start of the recovery.
// f may block (a Trust, a Sync) on the context it is given, which ends
// after 5 s or with the time left; between calls that failed at once Wait
// pauses 20 ms.
func (r *Recovery) Wait(t testing.TB, timeout time.Duration, what string, f func(ctx context.Context) error) {
	t.Helper()
	deadline := r.began.Add(timeout)
	var telling error // the last error that was not a context's end
	for {
		ctx, cancel := context.WithDeadline(context.Background(), earliest(deadline, time.Now().Add(5*time.Second)))
		called := time.Now()
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			telling = err
		}
		if time.Now().After(deadline) {
			if telling != nil && telling != err {
				t.Fatalf("%s: not within %v of the fault: %v (before: %v)", what, timeout, err, telling)
			}
			t.Fatalf("%s: not within %v of the fault: %v", what, timeout, err)
		}
		if time.Since(called) < 20*time.Millisecond {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Check logs what the recovery cost so far under name and fails the test
// if it is above RecoveryRequests or RecoveryCPU: a loop, even one that
// ends.
func (r *Recovery) Check(t testing.TB, name string) {
	t.Helper()
	wall, cpu, n := time.Since(r.began), CPUTime()-r.cpu0, r.requests()-r.n0
	t.Logf("%s recovered in %v: %d requests, %v of CPU", name, wall.Round(time.Millisecond), n, cpu.Round(time.Millisecond))
	if n > RecoveryRequests || cpu > RecoveryCPU {
		t.Fatalf("%s: the recovery cost %d requests and %v of CPU; one of this size needs far less (bounds %d, %v): a loop",
			name, n, cpu, RecoveryRequests, RecoveryCPU)
	}
}

// Bump moves the servers' zxid on by 2n changes (a create and a delete of
// /bump<i> each), so that a history the test makes after replacing the
// database stays behind the zxids its clients heard before: the client
// sees a new history at its new session's first sync.
func Bump(t testing.TB, conn *zk.Conn, n int) {
	t.Helper()
	for i := range n {
		p := fmt.Sprintf("/bump%d", i)
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// SessionHistory returns the History of c's session, waiting up to 30 s
// for one: between a lost session and the next, a client has none.
func SessionHistory(t testing.TB, c *connection.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.WaitSession(ctx)
	if err != nil {
		t.Fatalf("no session: %v", err)
	}
	return s.History()
}
