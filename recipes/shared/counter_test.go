package shared_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/retry"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestCounterOperations: add, increment, compare-and-set, set and
// initialize, in each encoding, with the bytes each peer expects.
func TestCounterOperations(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	conn := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	for _, tc := range []struct {
		enc  shared.Encoding
		want string // the node's data at 7
	}{
		{shared.Int64, "\x00\x00\x00\x00\x00\x00\x00\x07"},
		{shared.Int32, "\x00\x00\x00\x07"},
		{shared.Text, "7"},
	} {
		p := root + "/" + tc.enc.String()
		cn := newCounter(t, c, p, shared.WithEncoding(tc.enc))
		if n, err := cn.Get(ctx); n != 0 || err != nil {
			t.Fatalf("%s: Get of an absent counter = %d, %v", tc.enc, n, err)
		}
		res, err := cn.Add(ctx, 5)
		if err != nil || !res.Succeeded || res.Pre != 0 || res.Post != 5 || res.OptimisticTries != 1 {
			t.Fatalf("%s: Add 5 = %+v, %v", tc.enc, res, err)
		}
		if res, err = cn.Increment(ctx); err != nil || !res.Succeeded || res.Pre != 5 || res.Post != 6 {
			t.Fatalf("%s: Increment = %+v, %v", tc.enc, res, err)
		}
		if res, err = cn.Add(ctx, 1); err != nil || res.Post != 7 {
			t.Fatalf("%s: Add 1 = %+v, %v", tc.enc, res, err)
		}
		data, _, err := conn.Get(p)
		if err != nil || string(data) != tc.want {
			t.Fatalf("%s: node data %q, %v; want %q", tc.enc, data, err, tc.want)
		}
		if res, err = cn.CompareAndSet(ctx, 3, 9); err != nil || res.Succeeded || res.Pre != 7 || res.Post != 7 {
			t.Fatalf("%s: CompareAndSet(3, 9) = %+v, %v", tc.enc, res, err)
		}
		if res, err = cn.CompareAndSet(ctx, 7, -9); err != nil || !res.Succeeded || res.Pre != 7 || res.Post != -9 {
			t.Fatalf("%s: CompareAndSet(7, -9) = %+v, %v", tc.enc, res, err)
		}
		if err := cn.Set(ctx, 100); err != nil {
			t.Fatal(err)
		}
		if n, err := cn.Get(ctx); n != 100 || err != nil {
			t.Fatalf("%s: Get after Set = %d, %v", tc.enc, n, err)
		}
		if ok, err := cn.Initialize(ctx, 1); ok || err != nil {
			t.Fatalf("%s: Initialize of an existing counter = %v, %v", tc.enc, ok, err)
		}
		// The marker is the counter's only child, and goes with Close.
		kids, _, err := conn.Children(p)
		if err != nil || len(kids) != 1 || !shared.IsMarker(kids[0]) {
			t.Fatalf("%s: children %v, %v; want one marker", tc.enc, kids, err)
		}
		if err := cn.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if kids, _, err := conn.Children(p); err != nil || len(kids) != 0 {
			t.Fatalf("%s: children after Close %v, %v", tc.enc, kids, err)
		}
		if _, err := cn.Add(ctx, 1); !errors.Is(err, shared.ErrClosed) {
			t.Fatalf("%s: Add after Close = %v", tc.enc, err)
		}
		if _, err := cn.Get(ctx); !errors.Is(err, shared.ErrClosed) {
			t.Fatalf("%s: Get after Close = %v", tc.enc, err)
		}
		if err := cn.Close(ctx); err != nil {
			t.Fatalf("%s: second Close = %v", tc.enc, err)
		}
	}
	fresh := newCounter(t, c, root+"/init")
	if ok, err := fresh.Initialize(ctx, 42); !ok || err != nil {
		t.Fatalf("Initialize = %v, %v", ok, err)
	}
	if n, err := fresh.Get(ctx); n != 42 || err != nil {
		t.Fatalf("Get after Initialize = %d, %v", n, err)
	}
}

// TestCounterOverflowAndCorruption: a sum beyond the encoding is refused
// and nothing is written; a node that is not a number is an error.
func TestCounterOverflowAndCorruption(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	conn := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	cn := newCounter(t, c, root+"/c32", shared.WithEncoding(shared.Int32))
	if err := cn.Set(ctx, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	if res, err := cn.Increment(ctx); !errors.Is(err, shared.ErrOverflow) || res.Succeeded {
		t.Fatalf("Increment at MaxInt32 = %+v, %v", res, err)
	}
	if _, err := cn.CompareAndSet(ctx, math.MaxInt32, math.MaxInt32+1); !errors.Is(err, shared.ErrOverflow) {
		t.Fatalf("CompareAndSet beyond int32 = %v", err)
	}
	if n, _ := cn.Get(ctx); n != math.MaxInt32 {
		t.Fatalf("value %d after refused writes", n)
	}
	if _, err := conn.Set(root+"/c32", []byte("12345678"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := cn.Add(ctx, 1); !errors.Is(err, shared.ErrCorrupt) {
		t.Fatalf("Add on 8 bytes as int32 = %v", err)
	}
	if _, err := cn.Get(ctx); !errors.Is(err, shared.ErrCorrupt) {
		t.Fatalf("Get of 8 bytes as int32 = %v", err)
	}
}

// TestCounterContention: participants on several clients add at once;
// the counter ends at the sum of the adds that succeeded, and with a
// generous policy every add succeeds.
func TestCounterContention(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	p := ens.Root(t) + "/hits"
	ctx := ctxFor(t, 2*time.Minute)
	const clients, perClient, adds = 3, 4, 25
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sum int64
		n   int
	)
	for i := range clients {
		c := open(t, ens.Servers())
		for j := range perClient {
			cn := newCounter(t, c, p, shared.WithRetryPolicy(retry.Forever(time.Millisecond)))
			delta := int64(1 + i*perClient + j)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range adds {
					res, err := cn.Add(ctx, delta)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if res.Succeeded {
						sum += delta
						n++
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	got, err := newCounter(t, open(t, ens.Servers()), p).Get(ctx)
	if err != nil || got != sum || n != clients*perClient*adds {
		t.Fatalf("counter %d, %v; sum of %d succeeded adds %d", got, err, n, sum)
	}
}

// TestPromotedLock: with no optimistic retries, a contended add takes
// the promoted lock and succeeds under it.
func TestPromotedLock(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, 2*time.Minute)
	const n, adds = 6, 10
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		promoted int
		sum      int64
	)
	for range n {
		cn := newCounter(t, open(t, ens.Servers()), root+"/c",
			shared.WithRetryPolicy(retry.NTimes(0, 0)),
			shared.WithPromotedLock(root+"/lock", retry.Forever(time.Millisecond)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range adds {
				res, err := cn.Add(ctx, 1)
				if err != nil || !res.Succeeded {
					t.Errorf("Add = %+v, %v", res, err)
					return
				}
				mu.Lock()
				sum++
				if res.PromotedTries > 0 {
					promoted++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got, _ := newCounter(t, open(t, ens.Servers()), root+"/c").Get(ctx)
	if got != sum || sum != n*adds {
		t.Fatalf("counter %d, sum %d", got, sum)
	}
	if promoted == 0 {
		t.Fatal("no add was promoted to the lock")
	}
	t.Logf("%d of %d adds took the promoted lock", promoted, n*adds)
}

// TestCounterMisuse: a cancelled context writes nothing; Close during an
// operation ends it with ErrClosed and removes the marker; later
// operations fail with ErrClosed.
func TestCounterMisuse(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := open(t, ens.Servers())
	cn := newCounter(t, c, root+"/c")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cn.Add(done, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Add(cancelled) = %v", err)
	}
	if ok, _, _ := conn.Exists(root + "/c"); ok {
		t.Fatal("a cancelled Add made the node")
	}

	// An add stuck on a connection that hears nothing ends with Close.
	proxy := ens.Proxy(t)
	pc := open(t, proxy.Servers(), connection.WithSessionTimeout(20*time.Second))
	stuck := newCounter(t, pc, root+"/d")
	ctx := ctxFor(t, time.Minute)
	if _, err := stuck.Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	proxy.DropRequests()
	errc := make(chan error, 1)
	go func() {
		_, err := stuck.Add(ctx, 1)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // the add is waiting for an answer (if not yet, Close ends it before it starts)
	closed := make(chan struct{})
	go func() {
		stuck.Close(context.Background())
		close(closed)
	}()
	if err := <-errc; !errors.Is(err, shared.ErrClosed) {
		t.Fatalf("Add during Close = %v, want ErrClosed", err)
	}
	proxy.Restore()
	<-closed
	if _, err := stuck.Add(ctx, 1); !errors.Is(err, shared.ErrClosed) || !strings.Contains(err.Error(), "shared: add") {
		t.Fatalf("Add after Close = %v", err)
	}
	zktest.Eventually(t, 30*time.Second, "the marker goes", func() error {
		kids, _, err := conn.Children(root + "/d")
		if err == nil && len(kids) != 0 {
			err = fmt.Errorf("children %v", kids)
		}
		return err
	})
	if n, _ := newCounter(t, c, root+"/d").Get(ctx); n != 1 && n != 2 {
		t.Fatalf("counter %d", n)
	}
}
