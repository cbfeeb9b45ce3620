package connection_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// closeWorkers runs n goroutines that create, read and delete ephemeral
// nodes under root on c until a call fails; half of them with contexts
// that cannot end (go-zookeeper's call runs on the caller's goroutine),
// half with contexts that can. It returns a function that waits for them
// (at most d) and returns their last errors.
func closeWorkers(t *testing.T, c *connection.Client, root string, n int) (started <-chan struct{}, wait func(d time.Duration) []error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	first := make(chan struct{})
	var once sync.Once
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if g%2 == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Minute)
				defer cancel()
			}
			for i := 0; ; i++ {
				p := fmt.Sprintf("%s/e-%02d-%06d", root, g, i)
				if _, err := c.Create(ctx, p, nil, connection.Ephemeral); err != nil {
					errs[g] = fmt.Errorf("create %s: %w", p, err)
					return
				}
				once.Do(func() { close(first) })
				if _, _, err := c.Get(ctx, p); err != nil {
					errs[g] = fmt.Errorf("get %s: %w", p, err)
					return
				}
				if i%2 == 0 {
					if err := c.Delete(ctx, p, -1); err != nil {
						errs[g] = fmt.Errorf("delete %s: %w", p, err)
						return
					}
				}
			}
		}()
	}
	return first, func(d time.Duration) []error {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return errs
		case <-time.After(d):
			return nil
		}
	}
}

// TestCloseFromWatchCallbackWhileManyGoroutinesCall: many participants of
// one client create, read and delete ephemeral nodes, their answers
// delayed, when Close is called at once from a watch's AfterFunc and from
// two other goroutines. Every Close returns within a few seconds, every
// call returns, failing only with an error matching ErrClosed; calls
// after Close fail with ErrClosed; none of the session's ephemeral nodes
// is left on the server once Close returned.
func TestCloseFromWatchCallbackWhileManyGoroutinesCall(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs := ens.Conn(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/w", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := c.GetWatch(ctx, root+"/w")
	if err != nil {
		t.Fatal(err)
	}
	closes := make(chan time.Duration, 3)
	w.AfterFunc(func(zk.Event) {
		start := time.Now()
		c.Close()
		closes <- time.Since(start)
	})

	p.DelayReplies(100 * time.Millisecond)
	first, wait := closeWorkers(t, c, root, 16)
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("no create answered")
	}
	time.Sleep(300 * time.Millisecond)
	// The watch's notification comes 100 ms late: the other Closes start
	// about then.
	if _, err := obs.Set(root+"/w", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	for range 2 {
		go func() {
			start := time.Now()
			c.Close()
			closes <- time.Since(start)
		}()
	}
	for i := range 3 {
		select {
		case d := <-closes:
			if d > 5*time.Second {
				t.Errorf("Close %d took %v", i, d)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("Close %d did not return within 15 s", i)
		}
	}
	errs := wait(10 * time.Second)
	if errs == nil {
		t.Fatal("calls still running 10 s after Close returned")
	}
	for g, err := range errs {
		if !errors.Is(err, connection.ErrClosed) {
			t.Errorf("participant %d ended with %v, want an error matching ErrClosed", g, err)
		}
	}
	if _, _, err := c.Get(context.Background(), root); !errors.Is(err, connection.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	if _, err := obs.Sync(root); err != nil {
		t.Fatal(err)
	}
	kids, _, err := obs.Children(root)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, k := range kids {
		if strings.HasPrefix(k, "e-") {
			left = append(left, k)
		}
	}
	if len(left) > 0 {
		t.Fatalf("%d ephemeral nodes of the closed session left on the server: %v", len(left), left)
	}
}

// TestCloseIsBoundedWhileTheLinkFails: a client's participants have calls
// in flight when its link fails — answers dropped, everything dropped
// (blackhole), or the connection cut — and Close is called on the
// connected client. Close returns within its bound on the calls in flight
// (a second) plus its own shutdown (go-zookeeper's close: a second, two
// more to queue it), and every call returns. When the close reached the
// server (only the answers are dropped), none of the session's ephemeral
// nodes is left.
func TestCloseIsBoundedWhileTheLinkFails(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"replies dropped", "blackhole", "cut"} {
		t.Run(fault, func(t *testing.T) {
			ens := shared.Ensemble(t)
			root := ens.Root(t)
			p := ens.Proxy(t)
			c := open(t, p.Servers(), connection.WithSessionTimeout(20*time.Second))
			first, wait := closeWorkers(t, c, root, 8)
			<-first
			time.Sleep(100 * time.Millisecond)
			switch fault {
			case "replies dropped":
				p.DropReplies()
			case "blackhole":
				p.Blackhole()
			case "cut":
				p.Cut()
			}
			time.Sleep(200 * time.Millisecond)
			start := time.Now()
			c.Close()
			took := time.Since(start)
			errs := wait(5 * time.Second)
			t.Logf("Close took %v", took)
			if took > 4*time.Second {
				t.Errorf("Close took %v", took)
			}
			if errs == nil {
				t.Fatal("calls still running 5 s after Close returned")
			}
			for g, err := range errs {
				if !errors.Is(err, connection.ErrClosed) {
					t.Errorf("participant %d ended with %v, want an error matching ErrClosed", g, err)
				}
			}
			p.Restore()
			if fault != "replies dropped" {
				return // the close never reached the server: the session expires
			}
			// The close reached the server: the session's nodes are gone.
			obs := ens.Conn(t)
			if _, err := obs.Sync(root); err != nil {
				t.Fatal(err)
			}
			kids, _, err := obs.Children(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(kids) > 0 {
				t.Fatalf("%d ephemeral nodes of the closed session left on the server: %v", len(kids), kids)
			}
		})
	}
}
