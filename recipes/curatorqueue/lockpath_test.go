package curatorqueue_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// TestLockPathHoldsUntilConsume: under a lock path a taken message stays
// in the queue, locked: other consumers pass it; Release puts it back at
// its place; Consume removes it and its lock; Close releases what its
// queue value holds.
func TestLockPathHoldsUntilConsume(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ctx := ctxFor(t, time.Minute)
	root := ens.Root(t)
	path, locks := root+"/q", root+"/locks"
	ca, cb := open(t, ens.Servers()), open(t, ens.Servers())
	a := newQueue(t, ca, path, "plain", curatorqueue.WithLockPath(locks))
	b := newQueue(t, cb, path, "plain", curatorqueue.WithLockPath(locks))
	for _, v := range []string{"m1", "m2", "m3"} {
		if _, err := a.Put(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	m1, err := a.Take(ctx)
	if err != nil || string(m1.Items()[0]) != "m1" || !m1.Locked() || closed(m1.Done()) || m1.Err() != nil {
		t.Fatalf("a took %v, %v", m1, err)
	}
	if ok, _, err := cb.Exists(ctx, locks+"/"+m1.Name()); err != nil || !ok {
		t.Fatalf("lock node of %s: %v, %v", m1.Name(), ok, err)
	}
	m2, err := b.TryTake(ctx)
	if err != nil || string(m2.Items()[0]) != "m2" {
		t.Fatalf("b took %v, %v; want m2, m1 being locked", m2, err)
	}
	if err := m1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !closed(m1.Done()) || !errors.Is(m1.Err(), curatorqueue.ErrFinished) {
		t.Fatalf("after Release: done %v, err %v", closed(m1.Done()), m1.Err())
	}
	if err := m1.Consume(ctx); !errors.Is(err, curatorqueue.ErrFinished) {
		t.Fatalf("Consume after Release: %v, want ErrFinished", err)
	}
	again, err := b.TryTake(ctx)
	if err != nil || again.Name() != m1.Name() {
		t.Fatalf("b took %v, %v; want m1 back at its place", again, err)
	}
	for _, m := range []*curatorqueue.Message{m2, again} {
		if err := m.Consume(ctx); err != nil {
			t.Fatal(err)
		}
	}
	m3, err := a.TryTake(ctx)
	if err != nil || string(m3.Items()[0]) != "m3" {
		t.Fatalf("a took %v, %v", m3, err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(m3.Err(), curatorqueue.ErrFinished) {
		t.Fatalf("a message held at Close: %v, want ErrFinished", m3.Err())
	}
	last, err := b.TryTake(ctx)
	if err != nil || last.Name() != m3.Name() {
		t.Fatalf("b took %v, %v; want m3, released by Close", last, err)
	}
	if err := last.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{path, locks} {
		if names, _, err := cb.Children(ctx, dir); err != nil || len(names) != 0 {
			t.Fatalf("%s left: %v, %v", dir, names, err)
		}
	}
}

// TestLockPathMessageLostWithSession: a consumer whose session expires
// loses its message (Done, ErrMessageLost wrapping why; its Consume
// fails) and the message goes to another consumer.
func TestLockPathMessageLostWithSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ctx := ctxFor(t, time.Minute)
	root := ens.Root(t)
	path, locks := root+"/q", root+"/locks"
	p := ens.Proxy(t)
	a := newQueue(t, open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second)), path, "plain", curatorqueue.WithLockPath(locks))
	b := newQueue(t, open(t, ens.Servers()), path, "plain", curatorqueue.WithLockPath(locks))
	if _, err := b.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	m, err := a.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Done still open after the session expired")
	}
	// Under the standard error policy the hold ends as the connection
	// is suspended, before the expiry is heard.
	if err := m.Err(); !errors.Is(err, curatorqueue.ErrMessageLost) ||
		!(errors.Is(err, connection.ErrSessionLost) || errors.Is(err, connection.ErrSuspended)) {
		t.Fatalf("Err = %v, want ErrMessageLost and ErrSuspended or ErrSessionLost", err)
	}
	if err := m.Consume(ctx); !errors.Is(err, curatorqueue.ErrMessageLost) {
		t.Fatalf("Consume of a lost message: %v, want ErrMessageLost", err)
	}
	again, err := b.Take(ctx)
	if err != nil || again.Name() != m.Name() {
		t.Fatalf("b took %v, %v; want the lost message", again, err)
	}
	if err := again.Consume(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSeveralConsumersOfOneClientTakeEachMessageOnce: consumers of one
// client share its session, so the session does not tell their locks
// apart: each message is still held by one of them at a time, and
// consumed once, with and without a lock path.
func TestSeveralConsumersOfOneClientTakeEachMessageOnce(t *testing.T) {
	t.Parallel()
	for _, locked := range []bool{false, true} {
		t.Run(fmt.Sprintf("locked=%v", locked), func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			ctx := ctxFor(t, time.Minute)
			root := ens.Root(t)
			var opts []curatorqueue.Option
			if locked {
				opts = append(opts, curatorqueue.WithLockPath(root+"/locks"))
			}
			c := open(t, ens.Servers())
			q := newQueue(t, c, root+"/q", "plain", opts...)
			const consumers, n = 4, 60
			for i := range n {
				if _, err := q.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			var (
				mu       sync.Mutex
				consumed []string
				holding  = map[string]bool{}
				overlaps []string
				wg       sync.WaitGroup
			)
			for range consumers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						m, err := q.TryTake(ctx)
						if errors.Is(err, curatorqueue.ErrEmpty) {
							return
						}
						if err != nil {
							t.Error(err)
							return
						}
						item := string(m.Items()[0])
						mu.Lock()
						if holding[item] {
							overlaps = append(overlaps, item)
						}
						holding[item] = true
						mu.Unlock()
						time.Sleep(time.Millisecond) // held while others take
						mu.Lock()
						holding[item] = false
						mu.Unlock()
						if err := m.Consume(ctx); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						consumed = append(consumed, item)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(overlaps) > 0 {
				t.Errorf("held by two consumers at once: %v", overlaps)
			}
			var want []string
			for i := range n {
				want = append(want, fmt.Sprint(i))
			}
			sort.Strings(want)
			sort.Strings(consumed)
			if !slices.Equal(consumed, want) {
				t.Fatalf("consumed %v, want each of %d once", consumed, n)
			}
		})
	}
}

// TestWaitingConsumerTakesMessageFreedWithoutPut: a consumer waiting
// while every message is locked by another takes a message as soon as it
// comes free — released, or its holder's session ended — though the
// queue's children did not change.
func TestWaitingConsumerTakesMessageFreedWithoutPut(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"release", "expiry"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			ctx := ctxFor(t, time.Minute)
			root := ens.Root(t)
			path, locks := root+"/q", root+"/locks"
			p := ens.Proxy(t)
			a := newQueue(t, open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second)), path, "plain", curatorqueue.WithLockPath(locks))
			b := newQueue(t, open(t, ens.Servers()), path, "plain", curatorqueue.WithLockPath(locks))
			if _, err := b.Put(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
			held, err := a.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *curatorqueue.Message, 1)
			go func() {
				m, err := b.Take(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- m
			}()
			select {
			case m := <-got:
				t.Fatalf("took %v while it was locked", m)
			case <-time.After(300 * time.Millisecond):
			}
			if how == "release" {
				if err := held.Release(ctx); err != nil {
					t.Fatal(err)
				}
			} else if _, err := p.ExpireSession(); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-got:
				if m == nil || m.Name() != held.Name() {
					t.Fatalf("took %v, want %s", m, held.Name())
				}
				if err := m.Consume(ctx); err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the freed message was not taken")
			}
		})
	}
}
