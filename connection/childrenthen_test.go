package connection_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// thenResult is what one ChildrenThen's then was called with, and how
// many times.
type thenResult struct {
	calls    atomic.Int32
	done     chan struct{}
	children []string
	err      error
}

func newThen() *thenResult { return &thenResult{done: make(chan struct{})} }

func (r *thenResult) then(children []string, _ *zk.Stat, err error) {
	if r.calls.Add(1) == 1 {
		r.children, r.err = children, err
		close(r.done)
	}
}

func (r *thenResult) wait(t *testing.T, what string, within time.Duration) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(within):
		t.Fatalf("%s: then not called within %v", what, within)
	}
}

// TestChildrenThenCallsThenOnce: ChildrenThen's then is called exactly
// once, whatever happens to the request — answered; its context ended
// before it was sent; its client closed before; its client closed while
// the request waits on a silent connection (Close must not hang on it,
// and waits for it); its context cancelled while the connection is
// silent (then comes once the connection is given up, with an error).
func TestChildrenThenCallsThenOnce(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, ens.Servers())
	if err := c.EnsurePath(ctx, root+"/dir/a"); err != nil {
		t.Fatal(err)
	}

	r := newThen()
	connx.Of(c).ChildrenThen(ctx, root+"/dir", r.then)
	r.wait(t, "answered", 10*time.Second)
	if r.err != nil || !slices.Equal(r.children, []string{"a"}) {
		t.Errorf("answered: then(%v, %v), want [a]", r.children, r.err)
	}

	dead, cancel := context.WithCancel(ctx)
	cancel()
	r = newThen()
	connx.Of(c).ChildrenThen(dead, root+"/dir", r.then)
	r.wait(t, "cancelled before", 10*time.Second)
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled before: then(%v, %v), want context.Canceled", r.children, r.err)
	}

	// A silent connection: the request is written and never answered.
	p := ens.Proxy(t)
	pc := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	p.Blackhole()
	cctx, ccancel := context.WithCancel(ctx)
	rc := newThen()
	connx.Of(pc).ChildrenThen(cctx, root+"/dir", rc.then)
	time.Sleep(200 * time.Millisecond)
	ccancel()
	rc.wait(t, "cancelled on a silent connection", 20*time.Second)
	if rc.err == nil {
		t.Errorf("cancelled on a silent connection: then(%v, nil), want an error", rc.children)
	}
	t.Logf("cancelled on a silent connection: then(%v)", rc.err)

	r = newThen()
	connx.Of(pc).ChildrenThen(ctx, root+"/dir", r.then)
	time.Sleep(200 * time.Millisecond)
	closedAt := time.Now()
	closeDone := make(chan struct{})
	go func() { pc.Close(); close(closeDone) }()
	select {
	case <-closeDone:
	case <-time.After(15 * time.Second):
		t.Fatal("Close hangs on a ChildrenThen waiting on a silent connection")
	}
	t.Logf("Close returned after %v", time.Since(closedAt).Round(time.Millisecond))
	select {
	case <-r.done:
	default:
		t.Fatal("Close returned before then was called")
	}
	if !errors.Is(r.err, connection.ErrClosed) {
		t.Errorf("closed while waiting: then(%v, %v), want ErrClosed", r.children, r.err)
	}
	p.Restore()

	r = newThen()
	connx.Of(pc).ChildrenThen(ctx, root+"/dir", r.then)
	r.wait(t, "closed before", time.Second)
	if !errors.Is(r.err, connection.ErrClosed) {
		t.Errorf("closed before: then(%v, %v), want ErrClosed", r.children, r.err)
	}

	time.Sleep(100 * time.Millisecond)
	for _, x := range []*thenResult{rc, r} {
		if n := x.calls.Load(); n != 1 {
			t.Errorf("then called %d times", n)
		}
	}
}
