package mutex_test

import (
	"errors"
	"math"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/seqserver"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// saturating returns a client of a server of its own and a lock path
// whose directory's next sequence number is next.
func saturating(t *testing.T, next int32) (*connection.Client, string) {
	t.Helper()
	s := seqserver.Start(t)
	c := open(t, s.Servers())
	lock := "/lock"
	if _, err := c.Create(ctxFor(t, 10*time.Second), lock, nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	s.SetCounter(t, lock, next)
	return c, lock
}

// TestSaturatedSequenceNeverTwoHolders: once the lock directory's counter
// reaches 2^31-1, ZooKeeper 3.6+ names every new node with 2147483647.
// A newcomer must not hold while the holder does, however their GUIDs
// sort. The first contender below the limit holds as it always did.
func TestSaturatedSequenceNeverTwoHolders(t *testing.T) {
	c, lock := saturating(t, math.MaxInt32-1)
	ctx := ctxFor(t, time.Minute)
	var holders []*mutex.Mutex
	// try takes the lock for a new participant, and fails the test if it
	// holds while another does.
	try := func(wait bool) *mutex.Mutex {
		t.Helper()
		m := newMutex(t, c, lock)
		var err error
		if wait {
			err = m.Lock(ctxFor(t, 5*time.Second))
		} else {
			err = m.TryLock(ctx)
		}
		if err != nil {
			return nil
		}
		for _, h := range holders {
			if !closed(h.Done()) {
				t.Fatalf("two holders: %s and %s", path.Base(h.Node()), path.Base(m.Node()))
			}
		}
		holders = append(holders, m)
		return m
	}

	first := try(true) // sequence 2147483646: the last below the limit
	if first == nil {
		t.Fatal("the contender below the limit did not hold")
	}
	for range 8 {
		try(false) // 2147483647, behind the holder
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// From here on every node is named with 2147483647: whichever takes
	// the lock, no newcomer may take it too.
	try(true)
	for range 300 {
		try(false)
	}
}

// TestSaturatedSequenceIsAnError: a contender whose node is numbered at
// the limit fails at once with connection.ErrSequenceExhausted, waiting
// or not, and leaves no node; those below the limit keep their order and
// their tokens grow. Once the directory is made again, locking works, and
// the first node is numbered 0.
func TestSaturatedSequenceIsAnError(t *testing.T) {
	c, lock := saturating(t, math.MaxInt32-3)
	ctx := ctxFor(t, time.Minute)

	a := newMutex(t, c, lock)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// b and c wait, in that order.
	type result struct {
		m   *mutex.Mutex
		err error
	}
	got := make(chan result, 2)
	waiters := []*mutex.Mutex{newMutex(t, c, lock), newMutex(t, c, lock)}
	for i, m := range waiters {
		go func() { got <- result{m, m.Lock(ctx)} }()
		waitChildren(t, c, lock, i+2)
	}
	names := children(t, c, lock)

	for _, wait := range []bool{true, false} {
		d := newMutex(t, c, lock)
		var err error
		if wait {
			err = d.Lock(ctx)
		} else {
			err = d.TryLock(ctx)
		}
		if !errors.Is(err, connection.ErrSequenceExhausted) || d.Held() {
			t.Fatalf("at the limit (wait %v): %v, held %v; want ErrSequenceExhausted", wait, err, d.Held())
		}
		if !strings.Contains(err.Error(), "delete the directory and make it again") {
			t.Errorf("the error does not say what to do: %v", err)
		}
		if now := children(t, c, lock); !slices.Equal(now, names) {
			t.Fatalf("children %q after a refused contender, want %q", now, names)
		}
	}

	// The three below the limit hold in turn.
	holders := []*mutex.Mutex{a}
	for range waiters {
		prev := holders[len(holders)-1]
		token := prev.Token()
		if err := prev.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.m != waiters[len(holders)-1] || r.m.Token() <= token {
			t.Fatalf("holder %d out of order: %s, token %d after %d", len(holders), r.m.Node(), r.m.Token(), token)
		}
		holders = append(holders, r.m)
	}
	if err := holders[len(holders)-1].Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Made again, the directory counts from 0.
	if err := c.Delete(ctx, lock, -1); err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, c, lock)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(m.Node(), "-lock-0000000000") {
		t.Fatalf("first node of the new directory: %s", m.Node())
	}
}

// children lists dir, sorted.
func children(t *testing.T, c *connection.Client, dir string) []string {
	t.Helper()
	names, _, err := c.Children(ctxFor(t, 10*time.Second), dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// waitChildren waits until dir has n children.
func waitChildren(t *testing.T, c *connection.Client, dir string, n int) {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	for {
		names, _, w, err := c.ChildrenWatch(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == n {
			return
		}
		select {
		case <-w.Done():
		case <-ctx.Done():
			t.Fatalf("%s has %d children, want %d", dir, len(names), n)
		}
	}
}

// TestSaturatedSequenceInFlight: contenders from several clients lock at
// once as the directory's counter reaches its limit. One is numbered
// 2147483646 and holds; ZooKeeper numbers the others 2147483647 or, while
// a create is in flight ahead of them, below 0 — ahead of the holder. None
// of those holds, each fails with ErrSequenceExhausted, and none leaves a
// node.
func TestSaturatedSequenceInFlight(t *testing.T) {
	s := seqserver.Start(t)
	ctx := ctxFor(t, time.Minute)
	var clients []*connection.Client
	for range 4 {
		clients = append(clients, open(t, s.Servers()))
	}
	lock := "/lock"
	if _, err := clients[0].Create(ctx, lock, nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	s.SetCounter(t, lock, math.MaxInt32-1)

	// Each returns at once: it holds, or its node is refused, or (the
	// holder) it waits for the refused nodes ahead of it to go.
	lockCtx := ctxFor(t, 20*time.Second)
	ms := make([]*mutex.Mutex, 48)
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i := range ms {
		ms[i] = newMutex(t, clients[i%len(clients)], lock)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ms[i].Lock(lockCtx)
		}()
	}
	wg.Wait()
	var holders []string
	for i, err := range errs {
		switch {
		case err == nil:
			if closed(ms[i].Done()) {
				t.Fatalf("holder %s lost its hold", ms[i].Node())
			}
			holders = append(holders, path.Base(ms[i].Node()))
		case !errors.Is(err, connection.ErrSequenceExhausted):
			t.Errorf("contender %d: %v, want ErrSequenceExhausted", i, err)
		}
	}
	if len(holders) != 1 || !strings.HasSuffix(holders[0], "-lock-2147483646") {
		t.Fatalf("holders %q, want the one numbered 2147483646", holders)
	}
	if names := children(t, clients[0], lock); len(names) != 1 {
		t.Fatalf("children %q, want the holder's node only", names)
	}
}
