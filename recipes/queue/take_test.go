package queue_test

// Takes of the work queue, whose taken nodes sit at fixed paths: Consume
// with a short deadline ends the take, and workers of one client never
// hold one item together. The contract every hold keeps is holdtest's
// (hold_test.go).

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

// TestConsumeWithShortDeadlineEndsTheTake: see finishWithShortDeadline.
func TestConsumeWithShortDeadlineEndsTheTake(t *testing.T) {
	t.Parallel()
	finishWithShortDeadline(t, (*queue.Item).Consume)
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
