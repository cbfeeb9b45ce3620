package rwlock_test

// A downgrade that fails after its read node was made deletes that node.
// The contract every hold keeps is holdtest's (hold_test.go).

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

// TestFailedDowngradeLeavesNoReadNode: a downgrade (the write side held,
// then the read side locked) whose read node is made but whose hold is
// never confirmed — the session is suspended between the create and its
// answer, and the context ends before the session is trusted again — must
// delete that read node: afterwards a writer on another client can take
// the write lock.
//
// The suspension is made deterministic with answers that come late while
// the server keeps hearing the client: under the standard policy the
// client suspends when the newest answered request was sent two thirds of
// the session timeout ago (4 s of 6 s) and declares the session lost at
// 5.75 s. Answers delayed 4.6 s, with requests going out every 50 ms, keep
// it suspended and alive. go-zookeeper drops a connection that reads
// nothing for 4 s, so the delay is raised in two steps (2.5 s, then
// 4.6 s), each leaving a gap shorter than that.
func TestFailedDowngradeLeavesNoReadNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	rw := newRW(t, c, lock)
	obs := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	if err := rw.WriteLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	sess := c.Session()

	// Requests every 50 ms, so that (late) answers keep coming.
	traffic, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-traffic.Done():
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, _ = c.Exists(traffic, lock)
			}()
		}
	}()
	stop := sync.OnceFunc(func() {
		stopTraffic()
		wg.Wait()
		p.Restore()
	})
	defer stop()

	p.DelayReplies(2500 * time.Millisecond)
	if _, _, err := c.Exists(ctx, lock); err != nil { // answered 2.5 s late: the late answers flow
		t.Fatal(err)
	}
	if testkit.Closed(rw.WriteLock().Done()) {
		t.Fatal("the write hold was lost before the downgrade; the test proves nothing")
	}
	_, _, changed, err := obs.ChildrenW(lock)
	if err != nil {
		t.Fatal(err)
	}
	p.DelayReplies(4600 * time.Millisecond)
	// The read node's create is sent now and answered 4.6 s later, when
	// the client has been suspended for about 0.6 s; the context ends
	// 0.9 s after that, while the session is still suspended.
	dctx, cancel := context.WithTimeout(ctx, 5500*time.Millisecond)
	err = rw.ReadLock().Lock(dctx)
	cancel()
	if err == nil {
		t.Fatal("the downgrade succeeded: the session was not suspended in time; the test proves nothing")
	}
	if st := c.State(); st != connection.Suspended {
		t.Fatalf("the client is %v, not suspended, when the downgrade fails; the test proves nothing", st)
	}
	t.Logf("the failed downgrade, while suspended: %v", err)
	select {
	case <-changed:
	default:
		t.Fatal("the downgrade made no read node; the test proves nothing")
	}
	stop()
	if c.Session() != sess {
		t.Fatal("the session was lost (its nodes went with it); the test proves nothing")
	}
	if err := rw.WriteLock().Unlock(ctx); err != nil && !errors.Is(err, rwlock.ErrLockLost) {
		t.Fatalf("Unlock of the write side: %v", err)
	}

	writer := newRW(t, open(t, ens.Servers()), lock).WriteLock()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := writer.Lock(wctx); err != nil {
		kids, _, _ := obs.Children(lock)
		var reads []string
		for _, k := range kids {
			if strings.Contains(k, "__READ__") {
				reads = append(reads, k)
			}
		}
		t.Fatalf("a writer on another client cannot take the write lock after the failed downgrade (%v); read nodes left: %v",
			err, reads)
	}
	if err := writer.Unlock(ctx); err != nil {
		t.Error(err)
	}
}
