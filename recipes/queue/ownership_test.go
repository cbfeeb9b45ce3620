package queue_test

// Tests of ownership and release (docs/locks.md, "Ownership and release")
// for the work queue, whose taken nodes sit at fixed paths: a take ends
// before its release is sent, an unanswered release is never taken as not
// done, workers (not sessions) own taken nodes, and a delete of a taken
// node is never re-sent blind after a lost answer.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// takenGone waits until the server shows no taken node at p made by
// czxid (another worker may have taken the item again since).
func takenGone(t *testing.T, obs *zk.Conn, p string, czxid int64) {
	t.Helper()
	zktest.Eventually(t, 5*time.Second, "taken node "+p+" is deleted", func() error {
		ok, st, err := obs.Exists(p)
		if err == nil && ok && st.Czxid == czxid {
			err = errors.New("still there")
		}
		return err
	})
}

// finishWithShortDeadline takes the one item through a proxy, delays the
// answers 300 ms and finishes the take (Release or Consume) with a 100 ms
// deadline: the request is sent and applies, its answer comes late. When
// the call returns the take must be over — Done closed, Context
// cancelled, the error saying the deadline and that the outcome is
// unknown — a second call must say ErrFinished, and the taken node must
// go.
func finishWithShortDeadline(t *testing.T, finish func(*queue.Item, context.Context) error) {
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	p := ens.Proxy(t)
	q := newQueue(t, open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second)), path)
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := q.TryTake(ctx)
	if err != nil {
		t.Fatal(err)
	}

	p.DelayReplies(300 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = finish(it, short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with a deadline shorter than the reply: %v, want DeadlineExceeded", err)
	}
	testkit.WantOutcomeUnknown(t, err)
	if !closed(it.Done()) {
		t.Error("the take's Done is open after the call returned: the item is still taken")
	}
	if it.Context().Err() == nil {
		t.Error("the take's Context is not cancelled after the call returned")
	}
	p.Restore()
	if err := finish(it, ctx); !errors.Is(err, queue.ErrFinished) {
		t.Errorf("a second call = %v, want ErrFinished", err)
	}
	takenGone(t, obs, path+"/taken/"+it.Name(), it.Token())
}

// TestReleaseWithShortDeadlineEndsTheTake: see finishWithShortDeadline.
func TestReleaseWithShortDeadlineEndsTheTake(t *testing.T) {
	t.Parallel()
	finishWithShortDeadline(t, (*queue.Item).Release)
}

// TestConsumeWithShortDeadlineEndsTheTake: see finishWithShortDeadline.
func TestConsumeWithShortDeadlineEndsTheTake(t *testing.T) {
	t.Parallel()
	finishWithShortDeadline(t, (*queue.Item).Consume)
}

// TestReleaseEndsTheTakeBeforeAnotherWorkerTakesIt: two workers on their
// own clients hand one item back and forth: one releases it while the
// other waits in Take. At the moment the other's Take returns the item,
// the released take's Done (open before Release) must be closed — with
// no fault, and with the releasing client's answers delayed 1.5 s (its
// session stays trusted).
func TestReleaseEndsTheTakeBeforeAnotherWorkerTakesIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		n     int
		delay time.Duration
	}{
		{"no faults", 100, 0},
		{"releaser's answers delayed 1.5s", 3, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			path := ens.Root(t) + "/q"
			obs := ens.Conn(t)
			ctx := ctxFor(t, 2*time.Minute)
			var qs [2]*queue.Queue
			var ps [2]*zktest.Proxy
			for i := range qs {
				ps[i] = ens.Proxy(t)
				qs[i] = newQueue(t, open(t, ps[i].Servers(), connection.WithSessionTimeout(10*time.Second)), path)
			}
			if err := qs[0].Put(ctx, []byte("the one item")); err != nil {
				t.Fatal(err)
			}
			it, err := qs[0].TryTake(ctx)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				it         *queue.Item
				err        error
				lostClosed bool
			}
			holder, bad := 0, 0
			for i := range tc.n {
				waiter := 1 - holder
				prevDone := it.Done()
				if closed(prevDone) {
					t.Fatalf("handover %d: the take ended before its Release; the check would prove nothing", i)
				}
				res := make(chan result, 1)
				go func() {
					next, err := qs[waiter].Take(ctx)
					res <- result{next, err, closed(prevDone)} // at the instant Take returned
				}()
				zktest.Eventually(t, 10*time.Second, "the other worker waits in line", func() error {
					kids, _, err := obs.Children(path + "/takers")
					if err == nil && len(kids) != 1 {
						err = fmt.Errorf("%d in line", len(kids))
					}
					return err
				})
				if tc.delay > 0 {
					ps[holder].DelayReplies(tc.delay)
				}
				rerr := it.Release(ctx)
				ps[holder].Restore()
				r := <-res
				if rerr != nil || r.err != nil {
					t.Fatalf("handover %d: Release = %v, Take = %v", i, rerr, r.err)
				}
				if r.it.Name() != it.Name() {
					t.Fatalf("handover %d: took %s, want %s", i, r.it.Name(), it.Name())
				}
				if !r.lostClosed {
					bad++
				}
				it, holder = r.it, waiter
			}
			if err := it.Consume(ctx); err != nil {
				t.Fatal(err)
			}
			if bad > 0 {
				t.Errorf("in %d of %d handovers another worker took the item while the released take's Done was open", bad, tc.n)
			}
		})
	}
}

// TestWorkersOfOneClientNeverHoldOneItemTogether: two workers (two Queue
// values) on one shared client take 200 items as fast as they can (no
// line: TryTake), releasing every third take and finishing the others.
// No item may be taken by one worker while the other's take of it is
// open (its Done not closed); distinct takes have distinct tokens; and one
// worker's Release must never delete the taken node of the other's open
// take.
func TestWorkersOfOneClientNeverHoldOneItemTogether(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	c := open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, 2*time.Minute)
	qs := [2]*queue.Queue{newQueue(t, c, path), newQueue(t, c, path)}
	const items = 200
	for i := range items {
		if err := qs[0].Put(ctx, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	type take struct {
		name string
		lost <-chan struct{}
	}
	var (
		mu        sync.Mutex
		current   [2]*take          // each worker's open take
		tokens    = map[int64]int{} // token -> worker that got it
		takes     int
		overlaps  []string
		sameToken []string
		deleted   []string
		errs      []error
	)
	var wg sync.WaitGroup
	for w := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				it, err := qs[w].TryTake(ctx)
				if errors.Is(err, queue.ErrEmpty) {
					if left, err := qs[w].Len(ctx); err != nil || left == 0 {
						return
					}
					continue // the other worker has the last items
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("worker %d: TryTake: %w", w, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				takes++
				if o := current[1-w]; o != nil && o.name == it.Name() && !closed(o.lost) {
					overlaps = append(overlaps, it.Name())
				}
				if other, ok := tokens[it.Token()]; ok {
					sameToken = append(sameToken, fmt.Sprintf("%s: token %d of worker %d's take too", it.Name(), it.Token(), other))
				}
				tokens[it.Token()] = w
				current[w] = &take{it.Name(), it.Done()}
				mu.Unlock()
				release := n%3 == 0
				if release {
					err = it.Release(ctx)
				} else {
					err = it.Consume(ctx)
				}
				mu.Lock()
				current[w] = nil
				o := current[1-w]
				mu.Unlock()
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("worker %d: finish %s: %w", w, it.Name(), err))
					mu.Unlock()
				}
				if release && o != nil && o.name == it.Name() && !closed(o.lost) {
					// The other worker's take of this item is open: its
					// taken node must still be there.
					if ok, _, err := obs.Exists(path + "/taken/" + it.Name()); err == nil && !ok {
						mu.Lock()
						deleted = append(deleted, it.Name())
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs[:min(len(errs), 5)] {
		t.Error(err)
	}
	t.Logf("%d takes of %d items", takes, items)
	if len(overlaps) > 0 {
		t.Errorf("%d items taken by one worker while the other's take of them was open, e.g. %v", len(overlaps), overlaps[:min(len(overlaps), 3)])
	}
	if len(sameToken) > 0 {
		t.Errorf("%d takes with the token of another take, e.g. %v", len(sameToken), sameToken[:min(len(sameToken), 3)])
	}
	if len(deleted) > 0 {
		t.Errorf("%d times a worker's Release deleted the taken node of the other's open take, e.g. %v", len(deleted), deleted[:min(len(deleted), 3)])
	}
}

// TestReleaseWithLostAnswerLeavesTheNextTakeAlone: worker A's Release
// applies and its answer is lost (replies dropped); worker C, on another
// client, takes the item meanwhile; then A's connection comes back with
// the same session. A must not delete C's taken node (a blind retry of
// the delete would): C's node stays on the server, C's take stays open,
// and a third worker finds nothing to take.
func TestReleaseWithLostAnswerLeavesTheNextTakeAlone(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	p := ens.Proxy(t)
	ac := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	a := newQueue(t, ac, path)
	cc := open(t, ens.Servers())
	wc := newQueue(t, cc, path)
	third := newQueue(t, open(t, ens.Servers()), path)
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := a.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := a.TryTake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sess := ac.Session()
	taken := path + "/taken/" + it.Name()

	p.DropReplies()
	released := make(chan error, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		released <- it.Release(rctx)
	}()
	takenGone(t, obs, taken, it.Token()) // A's delete applied; its answer is lost
	cit, err := wc.TryTake(ctx)
	if err != nil {
		t.Fatalf("worker C's TryTake of the released item: %v", err)
	}
	if cit.Name() != it.Name() {
		t.Fatalf("worker C took %s, want %s", cit.Name(), it.Name())
	}
	p.Restore() // A's connection closes and comes back in the same session
	select {
	case err := <-released:
		t.Logf("A's Release: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("A's Release did not return")
	}
	if ac.Session() != sess {
		t.Fatal("A's session did not survive; the test proves nothing")
	}

	// Nothing signals that A has stopped trying: watch C's node for a
	// second after A's Release returned.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		ok, st, err := obs.Exists(taken)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || st.Czxid != cit.Token() {
			t.Fatalf("worker C's taken node %s was deleted by A's Release while C's take is open (Lost closed: %v)", taken, closed(cit.Done()))
		}
	}
	if closed(cit.Done()) {
		t.Error("worker C's take ended")
	}
	if dit, err := third.TryTake(ctx); !errors.Is(err, queue.ErrEmpty) {
		if err == nil {
			t.Errorf("a third worker took %s while worker C's take of it is open", dit.Name())
			_ = dit.Release(ctx)
		} else {
			t.Errorf("a third worker's TryTake = %v, want ErrEmpty", err)
		}
	}
	if err := cit.Consume(ctx); err != nil {
		t.Errorf("worker C's Consume: %v", err)
	}
}
