package connection_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestDeleteCreatedWhoseDeleteWasUnansweredWhenItsSessionExpiredSaysSoAndSendsNothingInTheNext:
// DeleteCreated's delete is written and its answer lost; the session
// expires meanwhile, and another session makes a node at the path. The
// call must say both that its outcome is unknown and that the session was
// lost, and nothing it sent may reach the client's next session: the
// other's node stays.
func TestDeleteCreatedWhoseDeleteWasUnansweredWhenItsSessionExpiredSaysSoAndSendsNothingInTheNext(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	other := ens.Conn(t)
	var (
		armed atomic.Bool
		mu    sync.Mutex
		after []string // requests on p in a session other than the first
		first atomic.Int64
	)
	made := make(chan error, 1)
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Path != p {
			return nil
		}
		if f := first.Load(); f != 0 && r.SessionID != f {
			mu.Lock()
			after = append(after, fmt.Sprintf("%s#%d", r.Op, r.Attempt))
			mu.Unlock()
		}
		if r.Op != "delete" || !armed.CompareAndSwap(true, false) {
			return nil
		}
		proxy.DropReplies()
		go func() {
			time.Sleep(200 * time.Millisecond) // the delete applied, its answer lost
			if _, err := proxy.ExpireSession(); err != nil {
				made <- fmt.Errorf("expire: %w", err)
				return
			}
			_, err := other.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			proxy.Restore()
			made <- err
		}()
		return nil
	}}
	c := open(t, proxy.Servers(), connection.WithObserver(observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	czxid := createOwn(ctx, t, c, p)
	first.Store(c.Session().ID())
	armed.Store(true)
	derr := c.DeleteCreated(ctx, p, czxid)
	if err := <-made; err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitSession(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	ok, got, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !ok || got.EphemeralOwner != other.SessionID() || len(after) > 0 {
		t.Errorf("other's node exists %v; requests in the next session %v", ok, after)
	}
	if !errors.Is(derr, connection.ErrOutcomeUnknown) || !errors.Is(derr, connection.ErrSessionLost) {
		t.Errorf("DeleteCreated whose delete was unanswered when its session expired = %v, want ErrOutcomeUnknown and ErrSessionLost", derr)
	}
}

// TestManyDeleteCreatedOnOneClientAcrossACutDeleteOnlyTheirOwnAndTellEachRequestOnce:
// 24 participants of one client delete their nodes at once; the
// connection is cut as the first deletes are handed over and restored
// shortly after; meanwhile an operator replaces half of the nodes with
// nodes of another session. Each call deletes its own node or leaves the
// other's, no call reports nil with its node there, and the observer is
// told every request once.
func TestManyDeleteCreatedOnOneClientAcrossACutDeleteOnlyTheirOwnAndTellEachRequestOnce(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	other := ens.Conn(t)
	const n = 24
	var (
		watching atomic.Bool
		cut      atomic.Bool
		mu       sync.Mutex
		log      []string
		outcomes = map[int]int{}
	)
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if !watching.Load() {
			return nil
		}
		mu.Lock()
		i := len(log)
		log = append(log, fmt.Sprintf("%s %s#%d", r.Op, r.Path, r.Attempt))
		mu.Unlock()
		if r.Op == "delete" && cut.CompareAndSwap(false, true) {
			proxy.Cut()
			go func() {
				for j := 0; j < n; j += 2 {
					p := fmt.Sprintf("%s/n%d", root, j)
					if err := obs.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
						t.Errorf("operator delete %s: %v", p, err)
					}
					if _, err := other.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
						t.Errorf("other's create %s: %v", p, err)
					}
				}
				time.Sleep(100 * time.Millisecond)
				proxy.Restore()
			}()
		}
		return func(connection.RequestDone) {
			mu.Lock()
			outcomes[i]++
			mu.Unlock()
		}
	}}
	c := open(t, proxy.Servers(), connection.WithObserver(observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 60*time.Second)
	czxids := make([]int64, n)
	for i := range czxids {
		p := fmt.Sprintf("%s/n%d", root, i)
		czxids[i] = createOwn(ctx, t, c, p)
	}
	watching.Store(true)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range czxids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.DeleteCreated(ctx, fmt.Sprintf("%s/n%d", root, i), czxids[i])
		}()
	}
	wg.Wait()
	for i := range czxids {
		p := fmt.Sprintf("%s/n%d", root, i)
		ok, st, err := obs.Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ok && st.EphemeralOwner != other.SessionID():
			t.Errorf("%s: our node left; DeleteCreated = %v", p, errs[i])
		case ok && i%2 == 1:
			t.Errorf("%s: a node of the other session where none was made", p)
		}
		if i%2 == 0 && !ok {
			t.Errorf("%s: the other session's node is gone; DeleteCreated = %v", p, errs[i])
		}
		if errs[i] != nil && !errors.Is(errs[i], zk.ErrNoNode) {
			t.Errorf("%s: DeleteCreated = %v", p, errs[i])
		}
	}
	eventuallyNil(t, func() error {
		mu.Lock()
		defer mu.Unlock()
		for i := range log {
			if outcomes[i] != 1 {
				return fmt.Errorf("%s told %d outcomes", log[i], outcomes[i])
			}
		}
		return nil
	})
	mu.Lock()
	t.Logf("%d requests, cut %v, results %v", len(log), cut.Load(), errs)
	mu.Unlock()
}

func eventuallyNil(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
