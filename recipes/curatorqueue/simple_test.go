package curatorqueue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// TestSimpleOfferPeekPollTake: Curator's SimpleDistributedQueue semantics:
// items in the order offered, Peek leaves the head, Poll takes it or says
// ErrEmpty, Take waits for an offer and ends with its context.
func TestSimpleOfferPeekPollTake(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/a/simple"
	ctx := ctxFor(t, time.Minute)
	q := newSimple(t, open(t, ens.Servers()), path)
	if _, err := q.Poll(ctx); !errors.Is(err, curatorqueue.ErrEmpty) {
		t.Fatalf("Poll of a queue not yet made: %v, want ErrEmpty", err)
	}
	if _, err := q.Peek(ctx); !errors.Is(err, curatorqueue.ErrEmpty) {
		t.Fatalf("Peek of a queue not yet made: %v, want ErrEmpty", err)
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := q.Offer(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		op   string
		want string
	}{{"peek", "a"}, {"peek", "a"}, {"poll", "a"}, {"take", "b"}, {"peek", "c"}, {"poll", "c"}} {
		var got []byte
		var err error
		switch step.op {
		case "peek":
			got, err = q.Peek(ctx)
		case "poll":
			got, err = q.Poll(ctx)
		default:
			got, err = q.Take(ctx)
		}
		if err != nil || string(got) != step.want {
			t.Fatalf("%s: %q, %v; want %q", step.op, got, err, step.want)
		}
	}
	if _, err := q.Poll(ctx); !errors.Is(err, curatorqueue.ErrEmpty) {
		t.Fatalf("Poll of the emptied queue: %v, want ErrEmpty", err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if b, err := q.Take(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take of an empty queue: %q, %v; want the deadline", b, err)
	}
	got := make(chan string, 1)
	go func() {
		b, err := q.Take(ctx)
		got <- fmt.Sprint(string(b), err)
	}()
	other := newSimple(t, open(t, ens.Servers()), path)
	if err := other.Offer(ctx, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != "late<nil>" {
		t.Fatalf("waiting Take got %q, want late", g)
	}
}

// TestSimpleQueueSharedWithCurator: a Go client and Curator's
// SimpleDistributedQueue on one path: each takes the other's items in the
// order offered; Curator's take waits for a Go offer; then both produce
// and both consume at once (three Go consumers on one client), and every
// item is taken exactly once.
func TestSimpleQueueSharedWithCurator(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/simple"
	ctx := ctxFor(t, 2*time.Minute)
	c := open(t, ens.Servers())
	q := newSimple(t, c, path)
	java := peertest.CuratorSimpleQueue(t, ens.ConnectString(), path)

	for _, v := range []string{"j1", "j2", "j3"} {
		java.Do("OFFERED", "offer %s", v)
	}
	for _, want := range []string{"j1", "j2", "j3"} {
		if b, err := q.Poll(ctx); err != nil || string(b) != want {
			t.Fatalf("Go polled %q, %v; want %q", b, err, want)
		}
	}
	for _, v := range []string{"g1", "g2"} {
		if err := q.Offer(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if v := java.Do("ITEM", "peek"); v != "g1" {
		t.Fatalf("Curator peeked %q, want g1", v)
	}
	for _, want := range []string{"g1", "g2"} {
		if v := java.Do("ITEM", "poll"); v != want {
			t.Fatalf("Curator polled %q, want %q", v, want)
		}
	}
	java.Do("EMPTY", "poll")
	java.Send("take 20000")
	java.Quiet(300 * time.Millisecond)
	if err := q.Offer(ctx, []byte("wake")); err != nil {
		t.Fatal(err)
	}
	if v := java.Expect("ITEM", 20*time.Second); v != "wake" {
		t.Fatalf("Curator's waiting take got %q, want wake", v)
	}

	// Both ways at once: Curator offers j-0..j-99 while Go offers g-0..g-99;
	// three Go consumers and Curator take until all 200 are taken.
	const n = 100
	var (
		mu    sync.Mutex
		taken []string
		wg    sync.WaitGroup
	)
	done := make(chan struct{})
	takeCtx, stopTakes := context.WithCancel(ctx)
	defer stopTakes()
	java.Send("puts j %d", n)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b, err := q.Take(takeCtx)
				if err != nil {
					return // stopped: what was taken is checked below
				}
				mu.Lock()
				taken = append(taken, "go:"+string(b))
				finished := len(taken) == 2*n
				mu.Unlock()
				if finished {
					close(done)
				}
			}
		}()
	}
	for i := range n {
		if err := q.Offer(ctx, []byte(fmt.Sprintf("g-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	java.Expect("OFFERED", 30*time.Second)
	for {
		line, err := java.Ask(10*time.Second, "poll")
		if err != nil {
			t.Fatal(err)
		}
		if line == "EMPTY" {
			break
		}
		mu.Lock()
		taken = append(taken, "java:"+line[len("ITEM "):])
		finished := len(taken) == 2*n
		mu.Unlock()
		if finished {
			close(done)
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	stopTakes()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	var items []string
	byJava := 0
	for _, s := range taken {
		if s[:5] == "java:" {
			byJava++
			items = append(items, s[5:])
		} else {
			items = append(items, s[3:])
		}
	}
	sort.Strings(items)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("g-%d", i), fmt.Sprintf("j-%d", i))
	}
	sort.Strings(want)
	if !slices.Equal(items, want) {
		t.Fatalf("taken %d items (%d by Curator): %v; want each of %d exactly once", len(items), byJava, items, len(want))
	}
	t.Logf("%d items taken by Curator, %d by the Go consumers", byJava, len(items)-byJava)
}
